import type { Redis } from '@upstash/redis'
import { rolloutSchema } from './rollout.ts'
import type { Rollout } from './rollout.ts'
import type { RolloutReadOptions, RolloutStore, StoredRollout } from './rollout-store.ts'

// Compare-and-set in one round trip: the revision check and the write cannot interleave with another writer.
const COMPARE_AND_SET = `
local current = tonumber(redis.call('HGET', KEYS[1], 'revision') or '0')
if current ~= tonumber(ARGV[1]) then return -1 end
redis.call('HSET', KEYS[1], 'revision', current + 1, 'rollout', ARGV[2])
return current + 1`

const key = (model: string) => `rollout:${model}`

/** Rollout state in Redis hashes `rollout:{model}` (revision, rollout JSON), shared by every isolate. */
export class UpstashRolloutStore implements RolloutStore {
  constructor(private readonly redis: Redis) {}

  async get(model: string): Promise<StoredRollout | undefined> {
    const stored = await this.redis.hgetall<Record<string, unknown>>(key(model))
    if (!stored || stored.rollout === undefined) return undefined
    const raw = typeof stored.rollout === 'string' ? JSON.parse(stored.rollout) : stored.rollout
    // What another writer stored is checked like a PUT body: a bad entry must not route traffic.
    const rollout = rolloutSchema.parse(raw)
    return { rollout, revision: Number(stored.revision) }
  }

  async compareAndSet(model: string, expected: number, rollout: Rollout): Promise<number | undefined> {
    const revision = Number(await this.redis.eval(COMPARE_AND_SET, [key(model)], [String(expected), JSON.stringify(rollout)]))
    return revision < 0 ? undefined : revision
  }
}

export interface CachedRolloutStoreOptions {
  /** How long an isolate trusts what it read: a change takes effect everywhere within this. */
  ttlMs?: number
  now?: () => number
}

/** A short-TTL isolate cache in front of a shared store, so routing costs no round trip per request. */
export class CachedRolloutStore implements RolloutStore {
  private readonly cache = new Map<string, { at: number; value: StoredRollout | undefined }>()
  private readonly ttlMs: number
  private readonly now: () => number

  constructor(private readonly store: RolloutStore, { ttlMs = 2_000, now = Date.now }: CachedRolloutStoreOptions = {}) {
    this.ttlMs = ttlMs
    this.now = now
  }

  async get(model: string, { fresh = false }: RolloutReadOptions = {}): Promise<StoredRollout | undefined> {
    const hit = this.cache.get(model)
    if (!fresh && hit && this.now() - hit.at < this.ttlMs) return hit.value
    let value: StoredRollout | undefined
    try {
      value = await this.store.get(model)
    } catch (error) {
      // Stale-if-error: an outage must not move traffic off the last rollout this isolate saw.
      // Kept for another TTL, so a down store is asked once per TTL, not once per request.
      // A writer gets the error: what it derives from must be the stored state.
      if (fresh || !hit) throw error
      this.cache.set(model, { at: this.now(), value: hit.value })
      return hit.value
    }
    this.cache.set(model, { at: this.now(), value })
    return value
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
