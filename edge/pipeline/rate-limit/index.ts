import { HEADERS } from '../../../shared/headers.ts'
import type { AuthVariables } from '../auth/index.ts'
import type { Stage } from '../stage.ts'
import { Problem } from '../../problem.ts'
import type { RateLimitResult } from '../../stores/limits/limiter.ts'
import type { RateLimiter } from '../../stores/limits/limiter.ts'

export interface RateLimitOptions {
  /** Length of the sliding window; the caller's per-minute limit is scaled to it. */
  windowMs?: number
}

const seconds = (ms: number) => Math.ceil(ms / 1000)

/** `RateLimit-*` headers (draft-ietf-httpapi-ratelimit-headers): limit, remaining, reset in seconds. */
const rateLimitHeaders = ({ limit, remaining, resetMs }: RateLimitResult): Record<string, string> => ({
  'RateLimit-Limit': String(limit),
  'RateLimit-Remaining': String(remaining),
  'RateLimit-Reset': String(seconds(resetMs)),
})

/**
 * Limits each caller (as `auth` resolved it) to its own `rateLimitPerMinute` over a sliding
 * window. Every response carries `RateLimit-*` headers; past the limit the answer is a 429
 * problem with `Retry-After`. The limiter is the isolate's: Redis, shared by every isolate, when
 * configured.
 */
export const rateLimit = ({ windowMs = 60_000 }: RateLimitOptions = {}): Stage<AuthVariables & { isolate: { limiter: RateLimiter } }> =>
  async function rateLimit(c, next) {
    const caller = c.get('caller')
    const max = Math.max(1, Math.round((caller.rateLimitPerMinute * windowMs) / 60_000))
    const result = await c.get('isolate').limiter.limit(caller.name, max, windowMs)
    const headers = rateLimitHeaders(result)
    if (!result.success) {
      const retryAfter = Math.max(1, seconds(result.resetMs))
      throw new Problem(429, 'Too Many Requests', `the API key "${caller.name}" may make ${max} requests per ${windowMs / 1000} s; retry in ${retryAfter} s`, {
        headers: { ...headers, [HEADERS.retryAfter]: String(retryAfter) },
      })
    }
    // On the final response, so later stages' problems carry them too.
    await next()
    for (const name in headers) c.res.headers.set(name, headers[name])
  }
