export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. */
  failureThreshold?: number
  /** How long an open circuit refuses before letting one probe through. */
  cooldownMs?: number
  now?: () => number
}

export type CircuitState = 'closed' | 'open' | 'half-open'

/**
 * Stops hammering a backend that is down: after `failureThreshold` consecutive failures calls
 * are refused without trying for `cooldownMs`; then one probe decides whether it closes again.
 */
export class CircuitBreaker {
  private failures = 0
  private openedAt = 0
  private probing = false
  private readonly failureThreshold: number
  private readonly cooldownMs: number
  private readonly now: () => number

  constructor({ failureThreshold = 5, cooldownMs = 5_000, now = Date.now }: CircuitBreakerOptions = {}) {
    this.failureThreshold = failureThreshold
    this.cooldownMs = cooldownMs
    this.now = now
  }

  get state(): CircuitState {
    if (this.failures < this.failureThreshold) return 'closed'
    return this.now() - this.openedAt >= this.cooldownMs ? 'half-open' : 'open'
  }

  /** Whether a call may go out now (in half-open, only one probe at a time). */
  allow(): boolean {
    const state = this.state
    if (state === 'closed') return true
    if (state === 'open' || this.probing) return false
    this.probing = true
    return true
  }

  /** Seconds until the circuit will let a probe through. */
  retryAfterSeconds(): number {
    return Math.max(1, Math.ceil((this.cooldownMs - (this.now() - this.openedAt)) / 1000))
  }

  success(): void {
    this.failures = 0
    this.probing = false
  }

  failure(): void {
    this.probing = false
    this.failures++
    if (this.failures >= this.failureThreshold) this.openedAt = this.now()
  }
}
