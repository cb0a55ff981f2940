/** The outcome of one rate-limit check. */
export interface RateLimitResult {
  /** Whether this request may proceed (a refused request is not counted). */
  success: boolean
  /** Requests allowed per window. */
  limit: number
  /** Further requests allowed right now (0 when refused). */
  remaining: number
  /**
   * Milliseconds from now until the limit next has room: when `remaining` is 0, until one more
   * request would be allowed (what `Retry-After` says); otherwise until the current fixed window ends.
   */
  resetMs: number
}

/** Counts requests per id; an @upstash/ratelimit-backed implementation fits the same shape. */
export interface RateLimiter {
  limit(id: string, max: number, windowMs: number): Promise<RateLimitResult>
}

export interface SlidingWindowOptions {
  /** Clock in epoch milliseconds; injectable for tests. */
  now?: () => number
  /** Most ids tracked at once; the least recently used is forgotten past this. */
  maxIds?: number
}

interface Counts {
  /** Index of the fixed window `current` counts in. */
  window: number
  windowMs: number
  previous: number
  current: number
}

/**
 * An in-isolate sliding-window limiter, the approximation @upstash/ratelimit's `slidingWindow`
 * uses: two fixed windows, the previous one's count weighted by how much of it still overlaps the
 * sliding window. O(1) memory per id, at most `maxIds` ids. Arithmetic is in integers (counts ×
 * milliseconds), so decisions are exact. Per isolate only: across isolates use the Redis one.
 */
export class SlidingWindowLimiter implements RateLimiter {
  readonly #now: () => number
  readonly #maxIds: number
  readonly #counts = new Map<string, Counts>()

  constructor({ now = Date.now, maxIds = 10_000 }: SlidingWindowOptions = {}) {
    if (!Number.isInteger(maxIds) || maxIds < 1) throw new RangeError('maxIds must be a positive integer')
    this.#now = now
    this.#maxIds = maxIds
  }

  /** Ids currently tracked (for tests and metrics). */
  get size(): number {
    return this.#counts.size
  }

  async limit(id: string, max: number, windowMs: number): Promise<RateLimitResult> {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`)
    if (!Number.isInteger(windowMs) || windowMs < 1) throw new RangeError(`windowMs must be a positive integer, got ${windowMs}`)
    const now = Math.floor(this.#now())
    const window = Math.floor(now / windowMs)
    const counts = this.#roll(this.#counts.get(id), window, windowMs)
    // Most recently used last, so the first key is the one to forget.
    this.#counts.delete(id)
    this.#counts.set(id, counts)
    if (this.#counts.size > this.#maxIds) this.#counts.delete(this.#counts.keys().next().value!)

    const elapsed = now - window * windowMs
    const success = counts.previous * (windowMs - elapsed) + (counts.current + 1) * windowMs <= max * windowMs
    if (success) counts.current += 1
    // Scaled by windowMs: how many more requests fit now.
    const used = counts.previous * (windowMs - elapsed) + counts.current * windowMs
    const remaining = success ? Math.max(0, Math.floor((max * windowMs - used) / windowMs)) : 0
    const resetMs = remaining > 0 ? windowMs - elapsed : this.#untilRoom(counts, max, windowMs, elapsed)
    return { success, limit: max, remaining, resetMs }
  }

  #roll(counts: Counts | undefined, window: number, windowMs: number): Counts {
    if (counts === undefined || counts.windowMs !== windowMs || counts.window < window - 1 || counts.window > window) {
      return { window, windowMs, previous: 0, current: 0 }
    }
    if (counts.window === window - 1) return { window, windowMs, previous: counts.current, current: 0 }
    return counts
  }

  /** Milliseconds from `elapsed` (into the current window) until one more request fits. */
  #untilRoom({ previous, current }: Counts, max: number, windowMs: number, elapsed: number): number {
    // Earliest offset `at` in a window with these counts where previous·(W − at) + (current + 1)·W ≤ max·W.
    const earliest = (prev: number, cur: number): number | undefined => {
      if (cur + 1 > max) return undefined
      if (prev === 0) return 0
      const at = Math.max(0, windowMs - Math.floor(((max - cur - 1) * windowMs) / prev))
      return at < windowMs ? at : undefined
    }
    const here = earliest(previous, current)
    if (here !== undefined) return Math.max(1, here - elapsed)
    const next = earliest(current, 0)
    if (next !== undefined) return windowMs - elapsed + next
    return 2 * windowMs - elapsed
  }
}
