import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../../shared/upstash-client.ts'
import { Problem } from '../../problem.ts'
import type { HistoryEntry, HistoryReader } from './history-store.ts'

/** The list a model's entries go to (by `UpstashRolloutStore`, with the change they record). */
export const historyKey = (model: string) => `rollout-history:${model}`

export interface UpstashHistoryStoreOptions {
  /** Longest wait for Redis per list (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
}

/**
 * The history in capped Redis lists `rollout-history:{model}`, newest at the head, shared by every
 * isolate. Entries are written by `UpstashRolloutStore` in the script that makes their change;
 * a list that cannot be read within `timeoutMs` is a 503, since an admin can retry.
 */
export class UpstashHistoryStore implements HistoryReader {
  readonly #timeoutMs: number

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS }: UpstashHistoryStoreOptions = {}) {
    this.#timeoutMs = timeoutMs
  }

  async list(model: string, limit: number): Promise<HistoryEntry[]> {
    const raw = await within(this.redis.lrange<unknown>(historyKey(model), 0, limit - 1), this.#timeoutMs).catch(() => {
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
