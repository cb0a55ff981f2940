/** The outcome of one rate-limit check. */
export interface RateLimitResult {
  /** Whether this request may proceed (a refused request is not counted). */
  success: boolean
  /** Requests allowed per window. */
  limit: number
  /** Further requests allowed right now (0 when refused). */
  remaining: number
  /**
   * Milliseconds from now until one more request than `remaining` fits, when the oldest counted
   * admission leaves the window. For a refusal: until the next request is allowed (`Retry-After`).
   */
  resetMs: number
}

/** Counts requests per id: in the isolate (`SlidingWindowLimiter`) or shared through Redis. */
export interface RateLimiter {
  limit(id: string, max: number, windowMs: number): Promise<RateLimitResult>
}

export const validateLimit = (max: number, windowMs: number): void => {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`)
  if (!Number.isInteger(windowMs) || windowMs < 1) throw new RangeError(`windowMs must be a positive integer, got ${windowMs}`)
}
