import { type RateLimitResult, type RateLimiter, validateLimit } from './limiter.ts'

export interface SlidingWindowOptions {
  /** Clock in epoch milliseconds; injectable for tests. */
  now?: () => number
  /** Most ids tracked at once; the least recently used is forgotten past this. */
  maxIds?: number
}

interface Log {
  windowMs: number
  /** Admission times, oldest first; those before `start` have left the window. */
  times: number[]
  start: number
}

/**
 * An exact sliding-log limiter in the isolate: a request at `t` is admitted when fewer than `max`
 * admissions lie in (t − window, t], so no rolling window ever holds more than `max`, and any
 * arrival sequence that itself keeps to the limit is admitted in full. Only admissions are kept,
 * so an id holds at most `max` times (refused floods cost nothing); at most `maxIds` ids.
 * Per isolate only: across isolates use the Redis one.
 */
export class SlidingWindowLimiter implements RateLimiter {
  readonly #now: () => number
  readonly #maxIds: number
  readonly #logs = new Map<string, Log>()

  constructor({ now = Date.now, maxIds = 10_000 }: SlidingWindowOptions = {}) {
    if (!Number.isInteger(maxIds) || maxIds < 1) throw new RangeError('maxIds must be a positive integer')
    this.#now = now
    this.#maxIds = maxIds
  }

  /** Ids currently tracked (for tests and metrics). */
  get size(): number {
    return this.#logs.size
  }

  async limit(id: string, max: number, windowMs: number): Promise<RateLimitResult> {
    validateLimit(max, windowMs)
    const log = this.#touch(id, windowMs)
    const { times } = log
    // A clock that steps back must not reorder the log: such a request counts as the newest.
    const now = Math.max(Math.floor(this.#now()), times.at(-1) ?? -Infinity)
    while (log.start < times.length && times[log.start] <= now - windowMs) log.start++
    // Dropping the expired prefix once it is half the array keeps this amortized O(1).
    if (log.start > 0 && log.start * 2 >= times.length) {
      times.splice(0, log.start)
      log.start = 0
    }
    const success = times.length - log.start < max
    if (success) times.push(now)
    const counted = times.length - log.start
    // One more fits once the admissions beyond max − 1 have left, the first of them last.
    const nextToLeave = times[log.start + Math.max(0, counted - max)]
    return { success, limit: max, remaining: Math.max(0, max - counted), resetMs: nextToLeave + windowMs - now }
  }

  /** The id's log, most recently used last so the first is the one to forget. */
  #touch(id: string, windowMs: number): Log {
    const known = this.#logs.get(id)
    const log = known?.windowMs === windowMs ? known : { windowMs, times: [], start: 0 }
    this.#logs.delete(id)
    this.#logs.set(id, log)
    if (this.#logs.size > this.#maxIds) this.#logs.delete(this.#logs.keys().next().value!)
    return log
  }
}
