import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../shared/upstash-client.ts'
import { Problem } from '../problem.ts'
import { rolloutSchema } from './rollout.ts'
import type { Rollout } from './rollout.ts'
import type { RolloutReadOptions, RolloutStore, StoredRollout } from './store.ts'

// Compare-and-set in one round trip: the revision check and the write cannot interleave with another writer.
const COMPARE_AND_SET = `
local current = tonumber(redis.call('HGET', KEYS[1], 'revision') or '0')
if current ~= tonumber(ARGV[1]) then return -1 end
redis.call('HSET', KEYS[1], 'revision', current + 1, 'rollout', ARGV[2])
return current + 1`

const key = (model: string) => `rollout:${model}`

export interface UpstashRolloutStoreOptions {
  /** Longest wait for Redis per read or write (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
}

/** What went wrong, for the log: the underlying cause when the error wraps one. */
const messageOf = (error: unknown): string =>
  error instanceof Error ? (error.cause === undefined ? error.message : messageOf(error.cause)) : String(error)

/**
 * Rollout state in Redis hashes `rollout:{model}` (revision, rollout JSON), shared by every isolate.
 * A call Redis fails or does not answer within `timeoutMs` is a 503: a write that timed out may
 * still land, which the revision then tells the next writer.
 */
export class UpstashRolloutStore implements RolloutStore {
  readonly #timeoutMs: number

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS }: UpstashRolloutStoreOptions = {}) {
    this.#timeoutMs = timeoutMs
  }

  #bounded<T>(work: Promise<T>): Promise<T> {
    return within(work, this.#timeoutMs).catch((error: unknown) => {
      // The detail is for clients: what Redis said stays out of it, kept as the cause for the log.
      const problem = new Problem(503, 'Service Unavailable', 'rollout state cannot be reached right now; retry shortly', { slug: 'rollout-unavailable', headers: { 'retry-after': '1' } })
      problem.cause = error
      throw problem
    })
  }

  async get(model: string): Promise<StoredRollout | undefined> {
    const stored = await this.#bounded(this.redis.hgetall<Record<string, unknown>>(key(model)))
    if (!stored || stored.rollout === undefined) return undefined
    const raw = typeof stored.rollout === 'string' ? JSON.parse(stored.rollout) : stored.rollout
    // What another writer stored is checked like a PUT body: a bad entry must not route traffic.
    const rollout = rolloutSchema.parse(raw)
    return { rollout, revision: Number(stored.revision) }
  }

  async compareAndSet(model: string, expected: number, rollout: Rollout): Promise<number | undefined> {
    const revision = Number(await this.#bounded(this.redis.eval(COMPARE_AND_SET, [key(model)], [String(expected), JSON.stringify(rollout)])))
    return revision < 0 ? undefined : revision
  }
}

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

  async compareAndSet(model: string, expected: number, rollout: Rollout): Promise<number | undefined> {
    const revision = await this.store.compareAndSet(model, expected, rollout)
    // What was just written is known; after a lost race only the cached value's freshness is.
    const hit = this.cache.get(model)
    if (revision !== undefined) this.cache.set(model, { at: this.now(), value: { rollout, revision } })
    else if (hit) this.cache.set(model, { at: -Infinity, value: hit.value })
    return revision
  }
}
