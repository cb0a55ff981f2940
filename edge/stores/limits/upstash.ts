import type { Redis } from '@upstash/redis'
import { within } from '../../../shared/upstash-client.ts'
import { CircuitBreaker } from '../../backend-client/circuit-breaker.ts'
import { randomHex } from '../../random-ids.ts'
import { type RateLimitResult, type RateLimiter, validateLimit } from './limiter.ts'
import { SlidingWindowLimiter } from './memory.ts'
import { messageOf } from '../../format.ts'

export interface UpstashRateLimiterOptions {
  redis: Redis
  /** Longest wait for Redis per check; slower counts as a failure and the isolate decides (default 50 ms). */
  timeoutMs?: number
  /** Redis keys are `<prefix>:<id>:<windowMs>`, one sorted set of admission times each. */
  prefix?: string
  now?: () => number
  /** Where the start and the end of a fallback spell are told (the Workers console by default). */
  log?: (line: string) => void
}

/**
 * The sliding log of `SlidingWindowLimiter`, in one sorted set per id: drop what left the window,
 * count, admit below max, and name the admission whose departure makes room for one more.
 */
const SLIDING_LOG = `
local key, now, window, max = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local counted = redis.call('ZCARD', key)
local admitted = counted < max
if admitted then
  redis.call('ZADD', key, now, ARGV[4])
  redis.call('PEXPIRE', key, window)
  counted = counted + 1
end
local nth = math.max(0, counted - max)
local leaving = redis.call('ZRANGE', key, nth, nth, 'WITHSCORES')
return { admitted and 1 or 0, counted, tonumber(leaving[2]) }
`

const isWindowAnswer = (answer: unknown): answer is [number, number, number] =>
  Array.isArray(answer) && answer.length === 3 && answer.every((n) => Number.isFinite(n))

/**
 * Per-key sliding logs shared by every isolate, in Redis: the same exact rule as the isolate
 * limiter, so a key gets its limit across all isolates and never more in any rolling window.
 * When Redis fails or does not answer within `timeoutMs`, this isolate's own log decides, with the
 * real limit: it also holds every admission Redis granted here, so a fallback starts from this
 * isolate's recent traffic instead of a fresh quota. A check that timed out may still be counted
 * in Redis when it lands: an outage errs toward refusing, never toward lifting a limit.
 */
export class UpstashRateLimiter implements RateLimiter {
  readonly #timeoutMs: number
  readonly #prefix: string
  readonly #now: () => number
  /** Stops asking Redis while it keeps failing: open after 5 failures, then a probe every 5 s. */
  readonly #breaker: CircuitBreaker
  readonly #log: (line: string) => void
  readonly #isolate: SlidingWindowLimiter
  readonly #script: ReturnType<Redis['createScript']>
  /** When this isolate started deciding alone; undefined while Redis answers. */
  #fallingBackSince: number | undefined

  constructor({ redis, timeoutMs = 50, prefix = 'ratelimit:edge', now = Date.now, log = console.error }: UpstashRateLimiterOptions) {
    this.#timeoutMs = timeoutMs
    this.#prefix = prefix
    this.#now = now
    this.#breaker = new CircuitBreaker({ failureThreshold: 5, cooldownMs: 5_000, now })
    this.#log = log
    this.#isolate = new SlidingWindowLimiter({ now })
    this.#script = redis.createScript(SLIDING_LOG)
  }

  async limit(id: string, max: number, windowMs: number): Promise<RateLimitResult> {
    validateLimit(max, windowMs)
    if (!this.#breaker.allow()) return this.#isolate.limit(id, max, windowMs)
    let shared: RateLimitResult
    try {
      shared = await within(this.#ask(id, max, windowMs), this.#timeoutMs)
    } catch (error) {
      this.#breaker.failure()
      this.#startFallback(error)
      return this.#isolate.limit(id, max, windowMs)
    }
    this.#breaker.success()
    this.#endFallback()
    if (shared.success) await this.#isolate.limit(id, max, windowMs)
    return shared
  }

  async #ask(id: string, max: number, windowMs: number): Promise<RateLimitResult> {
    const now = Math.floor(this.#now())
    const answer: unknown = await this.#script.exec([`${this.#prefix}:${id}:${windowMs}`], [String(now), String(windowMs), String(max), randomHex(8)])
    if (!isWindowAnswer(answer)) throw new Error(`unexpected answer from the rate-limit script: ${JSON.stringify(answer)}`)
    const [admitted, counted, leavingAt] = answer
    return { success: admitted === 1, limit: max, remaining: Math.max(0, max - counted), resetMs: leavingAt + windowMs - now }
  }

  #startFallback(error: unknown): void {
    if (this.#fallingBackSince !== undefined) return
    this.#fallingBackSince = this.#now()
    this.#log(JSON.stringify({ level: 'warn', msg: 'rate limits are per isolate until Redis answers again', error: messageOf(error) }))
  }

  #endFallback(): void {
    if (this.#fallingBackSince === undefined) return
    this.#log(JSON.stringify({ level: 'info', msg: 'rate limits are shared through Redis again', fallback_ms: this.#now() - this.#fallingBackSince }))
    this.#fallingBackSince = undefined
  }
}
