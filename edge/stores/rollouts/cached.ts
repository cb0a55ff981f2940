import type { Rollout } from '../../rollout/rollout.ts'
import type { RolloutChange, RolloutReadOptions, RolloutStore, StoredRollout } from './rollout-store.ts'
import { messageOf } from '../../format.ts'

export interface CachedRolloutStoreOptions {
  /** How long an isolate trusts what it read: a change takes effect everywhere within this. */
  ttlMs?: number
  now?: () => number
  /** Where the start and the end of a spell without the store are told (the Workers console by default). */
  log?: (line: string) => void
}

/** A short-TTL isolate cache in front of a shared store, so routing costs no round trip per request. */
export class CachedRolloutStore implements RolloutStore {
  private readonly cache = new Map<string, { at: number; value: StoredRollout | undefined }>()
  private readonly ttlMs: number
  private readonly now: () => number
  private readonly log: (line: string) => void
  /** When reads started failing; undefined while the store answers. */
  private unreadableSince: number | undefined

  constructor(private readonly store: RolloutStore, { ttlMs = 2_000, now = Date.now, log = console.error }: CachedRolloutStoreOptions = {}) {
    this.ttlMs = ttlMs
    this.now = now
    this.log = log
  }

  async get(model: string, { fresh = false }: RolloutReadOptions = {}): Promise<StoredRollout | undefined> {
    const hit = this.cache.get(model)
    if (!fresh && hit && this.now() - hit.at < this.ttlMs) return hit.value
    let value: StoredRollout | undefined
    try {
      value = await this.store.get(model)
    } catch (error) {
      // A writer gets the error: what it derives from must be the stored state.
      if (fresh) throw error
      // Stale-if-error (a timeout is one): an outage must not move traffic off the last rollout
      // this isolate saw; one it never saw routes by the default. Kept for another TTL, so a down
      // or stalled store is asked once per TTL, not once per request.
      this.unreadable(model, error)
      this.cache.set(model, { at: this.now(), value: hit?.value })
      return hit?.value
    }
    this.readable()
    this.cache.set(model, { at: this.now(), value })
    return value
  }

  private unreadable(model: string, error: unknown): void {
    if (this.unreadableSince !== undefined) return
    this.unreadableSince = this.now()
    this.log(JSON.stringify({ level: 'warn', msg: 'rollout state unreadable; routing by the last known rollout, else the default', model, error: messageOf(error) }))
  }

  private readable(): void {
    if (this.unreadableSince === undefined) return
    this.log(JSON.stringify({ level: 'info', msg: 'rollout state readable again', unreadable_ms: this.now() - this.unreadableSince }))
    this.unreadableSince = undefined
  }

  async compareAndSet(model: string, expected: number, rollout: Rollout, change?: RolloutChange): Promise<number | undefined> {
    const revision = await this.store.compareAndSet(model, expected, rollout, change)
    // What was just written is known; after a lost race, or a resend that an earlier attempt had
    // applied (what it wrote may differ from `rollout`), only the cached value's freshness is.
    const hit = this.cache.get(model)
    if (revision !== undefined && !change) this.cache.set(model, { at: this.now(), value: { rollout, revision } })
    else if (hit) this.cache.set(model, { at: -Infinity, value: hit.value })
    return revision
  }
}
