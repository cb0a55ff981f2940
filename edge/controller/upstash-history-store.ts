import type { Redis } from '@upstash/redis'
import { HISTORY_CAP, type HistoryEntry, type HistoryStore } from './history-store.ts'

const key = (model: string) => `rollout-history:${model}`

/** The history in capped Redis lists `rollout-history:{model}`, newest at the head, shared by every isolate. */
export class UpstashHistoryStore implements HistoryStore {
  constructor(private readonly redis: Redis, private readonly cap = HISTORY_CAP) {}

  async append(entry: HistoryEntry): Promise<void> {
    // One round trip, not a transaction: appends may interleave, but each trims after its push.
    await this.redis.pipeline().lpush(key(entry.model), JSON.stringify(entry)).ltrim(key(entry.model), 0, this.cap - 1).exec()
  }

  async list(model: string, limit: number): Promise<HistoryEntry[]> {
    const raw = await this.redis.lrange<unknown>(key(model), 0, limit - 1)
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
