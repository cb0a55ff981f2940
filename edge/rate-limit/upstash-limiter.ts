import { Ratelimit } from '@upstash/ratelimit'
import type { Redis } from '@upstash/redis'
import { SlidingWindowLimiter, type RateLimiter, type RateLimitResult } from './sliding-window.ts'

export interface UpstashRateLimiterOptions {
  redis: Redis
  /** Budget of one Redis round trip; past it the request is let through (the store must not become the outage). */
  timeoutMs?: number
  prefix?: string
  now?: () => number
}

/**
 * Per-key sliding windows shared by every isolate, through `@upstash/ratelimit`. One limiter per
 * distinct (limit, window), since each key carries its own rate; blocked ids are remembered in
 * the isolate so a flood costs no Redis calls.
 */
export class UpstashRateLimiter implements RateLimiter {
  private readonly limiters = new Map<string, Ratelimit>()
  private readonly ephemeralCache = new Map<string, number>()

  /** Per-isolate limits while Redis fails: an outage neither turns into errors nor lifts every limit. */
  private readonly fallback: SlidingWindowLimiter

  constructor(private readonly options: UpstashRateLimiterOptions) {
    this.fallback = new SlidingWindowLimiter(options.now ? { now: options.now } : {})
  }

  async limit(id: string, max: number, windowMs: number): Promise<RateLimitResult> {
    let outcome: Awaited<ReturnType<Ratelimit['limit']>>
    try {
      outcome = await this.limiterFor(max, windowMs).limit(id)
    } catch {
      return this.fallback.limit(id, max, windowMs)
    }
    const { success, limit, remaining, reset } = outcome
    return { success, limit, remaining, resetMs: Math.max(0, reset - (this.options.now ?? Date.now)()) }
  }

  private limiterFor(max: number, windowMs: number): Ratelimit {
    const key = `${max}/${windowMs}`
    let limiter = this.limiters.get(key)
    if (!limiter) {
      limiter = new Ratelimit({
        redis: this.options.redis,
        limiter: Ratelimit.slidingWindow(max, `${windowMs} ms`),
        prefix: `${this.options.prefix ?? 'ratelimit:edge'}:${key}`,
        timeout: this.options.timeoutMs ?? 50,
        ephemeralCache: this.ephemeralCache,
        analytics: false,
      })
      this.limiters.set(key, limiter)
    }
    return limiter
  }
}
