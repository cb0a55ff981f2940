import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../shared/upstash-client.ts'
import { Problem } from '../problem.ts'
import { HISTORY_CAP, type HistoryEntry, type HistoryStore } from './history-store.ts'

const key = (model: string) => `rollout-history:${model}`

export interface UpstashHistoryStoreOptions {
  /** Longest wait for Redis per append or list (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
}

/**
 * The history in capped Redis lists `rollout-history:{model}`, newest at the head, shared by every
 * isolate. Every call is bounded by `timeoutMs`: an append that fails is the caller's to log, a
 * list that fails is a 503, since an admin can retry.
 */
export class UpstashHistoryStore implements HistoryStore {
  readonly #timeoutMs: number

  constructor(private readonly redis: Redis, private readonly cap = HISTORY_CAP, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS }: UpstashHistoryStoreOptions = {}) {
    this.#timeoutMs = timeoutMs
  }

  async append(entry: HistoryEntry): Promise<void> {
    // One round trip, not a transaction: appends may interleave, but each trims after its push.
    await within(this.redis.pipeline().lpush(key(entry.model), JSON.stringify(entry)).ltrim(key(entry.model), 0, this.cap - 1).exec(), this.#timeoutMs)
  }

  async list(model: string, limit: number): Promise<HistoryEntry[]> {
    const raw = await within(this.redis.lrange<unknown>(key(model), 0, limit - 1), this.#timeoutMs).catch(() => {
      throw new Problem(503, 'Service Unavailable', 'the rollout history cannot be read right now; retry shortly', { slug: 'history-unavailable', headers: { 'retry-after': '1' } })
    })
    // @upstash/redis parses JSON members unless automatic deserialization is off; anything that is
    // not an entry (written by hand, truncated) is left out rather than failing the whole list.
    return raw.map((e) => (typeof e === 'string' ? parsed(e) : e)).filter(isEntry)
  }
}

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const isEntry = (value: unknown): value is HistoryEntry =>
  typeof value === 'object' && value !== null &&
  ['id', 'model', 'time', 'actor', 'action', 'reason'].every((field) => typeof (value as Record<string, unknown>)[field] === 'string')
