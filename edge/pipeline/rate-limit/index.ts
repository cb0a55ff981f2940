import { HEADERS } from '../../../shared/headers.ts'
import type { AuthVariables } from '../auth/index.ts'
import type { Stage } from '../stage.ts'
import { Problem } from '../../problem.ts'
import type { RateLimitResult } from '../../stores/limits/limiter.ts'
import type { RateLimiter } from '../../stores/limits/limiter.ts'
import type { BindingRateLimiters } from '../../stores/limits/binding.ts'

export interface RateLimitOptions {
  /** Length of the sliding window; the caller's per-minute limit is scaled to it. */
  windowMs?: number
}

const seconds = (ms: number) => Math.ceil(ms / 1000)

/**
 * `Retry-After` of a key refused by a `[[ratelimits]]` binding: the binding tells neither its
 * period nor when its count falls, and 60 s, the longest period a binding may have, is the wait
 * after which there is room again whatever the binding's.
 */
export const BINDING_RETRY_AFTER_S = 60

/** `RateLimit-*` headers (draft-ietf-httpapi-ratelimit-headers): limit, remaining, reset in seconds. */
const rateLimitHeaders = ({ limit, remaining, resetMs }: RateLimitResult): Record<string, string> => ({
  'RateLimit-Limit': String(limit),
  'RateLimit-Remaining': String(remaining),
  'RateLimit-Reset': String(seconds(resetMs)),
})

/**
 * Limits each caller (as `auth` resolved it). A key with `rateLimitPerMinute` is counted exactly
 * over a sliding window by the isolate's limiter (Redis, shared by every isolate, when configured);
 * every response carries `RateLimit-*` headers and past the limit the answer is a 429 problem with
 * `Retry-After`. A key naming a `[[ratelimits]]` binding is counted by that binding, per Cloudflare
 * location, with no round trip; the binding says only yes or no, so its answers carry no
 * `RateLimit-*` headers (nothing true could be put in them) and its 429 says `Retry-After: 60`.
 */
export const rateLimit = ({ windowMs = 60_000 }: RateLimitOptions = {}): Stage<AuthVariables & { isolate: { limiter: RateLimiter; rateLimitBindings: BindingRateLimiters } }> =>
  async function rateLimit(c, next) {
    const caller = c.get('caller')
    if (caller.rateLimitBinding !== undefined) {
      if (!(await c.get('isolate').rateLimitBindings.limit(caller.rateLimitBinding, caller.name))) {
        throw new Problem(429, 'Too Many Requests', `the API key "${caller.name}" is over the limit of its rate-limit tier ${caller.rateLimitBinding} in this location; retry in at most ${BINDING_RETRY_AFTER_S} s`, {
          headers: { [HEADERS.retryAfter]: String(BINDING_RETRY_AFTER_S) },
        })
      }
      return next()
    }
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
