import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../../shared/upstash-client.ts'
import { WRITE_ID_TTL_SECONDS, inDoubtAfter, writeIdKey } from '../../../shared/write-once.ts'
import { Problem } from '../../problem.ts'
import { type Rollout, rolloutSchema } from '../../rollout/rollout.ts'
import { HISTORY_CAP } from '../history/history-store.ts'
import { historyKey } from '../history/upstash.ts'
import { DECISIONS, REQUEST_METRICS_HASH, field } from '../tallies/tally.ts'
import type { RolloutChange, RolloutReadOptions, RolloutStore, StoredRollout } from './rollout-store.ts'

/**
 * Compare-and-set in one round trip: the revision check and the write cannot interleave with
 * another writer. With a change (ARGV[3] its entry), the same script checks the change's id
 * first (KEYS[2]: the revision it made, when it was applied before), then appends the entry to
 * the capped history (KEYS[3]) and counts it (KEYS[4], field ARGV[4]) beside the write, so a
 * write that lands after its answer was given up is still recorded, and a resend of it is not.
 */
const COMPARE_AND_SET = `
if ARGV[3] ~= '' then
  local made = redis.call('GET', KEYS[2])
  if made then return tonumber(made) end
end
local current = tonumber(redis.call('HGET', KEYS[1], 'revision') or '0')
if current ~= tonumber(ARGV[1]) then return -1 end
redis.call('HSET', KEYS[1], 'revision', current + 1, 'rollout', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[2], current + 1, 'EX', ARGV[6])
  redis.call('LPUSH', KEYS[3], ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[5]) - 1)
  redis.call('HINCRBY', KEYS[4], ARGV[4], 1)
end
return current + 1`

const key = (model: string) => `rollout:${model}`

export interface UpstashRolloutStoreOptions {
  /** Longest wait for Redis per read or write (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
}

/**
 * Rollout state in Redis hashes `rollout:{model}` (revision, rollout JSON), shared by every isolate;
 * a change's history entry goes to the list `UpstashHistoryStore` reads, and its count to the
 * request metrics' hash, in the same script. A call Redis fails or does not answer within
 * `timeoutMs` is a 503 (its cause a `WriteInDoubt` for a write that timed out): such a write may
 * still land, which its id then tells a resend.
 */
export class UpstashRolloutStore implements RolloutStore {
  readonly #timeoutMs: number

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS }: UpstashRolloutStoreOptions = {}) {
    this.#timeoutMs = timeoutMs
  }

  #bounded<T>(work: Promise<T>, writeId?: string): Promise<T> {
    return (writeId === undefined ? within(work, this.#timeoutMs) : inDoubtAfter(writeId, this.#timeoutMs, work)).catch((error: unknown) => {
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

  async compareAndSet(model: string, expected: number, rollout: Rollout, change?: RolloutChange): Promise<number | undefined> {
    const keys = [key(model), writeIdKey(change?.id ?? ''), historyKey(model), REQUEST_METRICS_HASH]
    const args = [
      String(expected),
      JSON.stringify(rollout),
      change ? JSON.stringify(change.entry) : '',
      change ? field(DECISIONS, model, change.entry.action) : '',
      String(HISTORY_CAP),
      String(WRITE_ID_TTL_SECONDS),
    ]
    const revision = Number(await this.#bounded(this.redis.eval(COMPARE_AND_SET, keys, args), change?.id))
    return revision < 0 ? undefined : revision
  }
}
