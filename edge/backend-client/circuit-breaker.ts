export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. */
  failureThreshold?: number
  /** How long an open circuit refuses before letting one probe through. */
  cooldownMs?: number
  /**
   * How long a probe may stay out before it counts as failed. A call cancelled mid-flight (its
   * request torn down with the client gone) never reports, and must not hold the circuit for ever.
   */
  probeTimeoutMs?: number
  now?: () => number
}

/** `half-open`: the next call is let through as the probe; `probing`: it is out, the others wait. */
export type CircuitState = 'closed' | 'open' | 'half-open' | 'probing'

/**
 * Stops hammering a backend that is down: after `failureThreshold` consecutive failures calls
 * are refused without trying for `cooldownMs`; then one probe decides whether it closes again.
 * Every call `allow()` lets out must end in `success()` or `failure()`.
 */
export class CircuitBreaker {
  private failures = 0
  private openedAt = 0
  private probeSentAt: number | undefined
  private readonly failureThreshold: number
  private readonly cooldownMs: number
  private readonly probeTimeoutMs: number
  private readonly now: () => number

  constructor({ failureThreshold = 5, cooldownMs = 5_000, probeTimeoutMs = 60_000, now = Date.now }: CircuitBreakerOptions = {}) {
    this.failureThreshold = failureThreshold
    this.cooldownMs = cooldownMs
    this.probeTimeoutMs = probeTimeoutMs
    this.now = now
  }

  get state(): CircuitState {
    if (this.failures < this.failureThreshold) return 'closed'
    const now = this.now()
    if (this.probeSentAt !== undefined && now - this.probeSentAt < this.probeTimeoutMs) return 'probing'
    return now - this.openedSince(now) >= this.cooldownMs ? 'half-open' : 'open'
  }

  /** Whether a call may go out now (in half-open, only one probe at a time). */
  allow(): boolean {
    const state = this.state
    if (state === 'closed') return true
    if (state !== 'half-open') return false
    this.probeSentAt = this.now()
    return true
  }

  /** Nothing to remember: closed with no failure counted and no probe out, as a new breaker is. */
  get clean(): boolean {
    return this.failures === 0 && this.probeSentAt === undefined
  }

  /** Seconds until the circuit will let a probe through. */
  retryAfterSeconds(): number {
    const now = this.now()
    return Math.max(1, Math.ceil((this.cooldownMs - (now - this.openedSince(now))) / 1000))
  }

  success(): void {
    this.failures = 0
    this.probeSentAt = undefined
  }

  failure(): void {
    this.probeSentAt = undefined
    this.failures++
    if (this.failures >= this.failureThreshold) this.openedAt = this.now()
  }

  /** When the circuit last opened: a probe that outlived its timeout failed, and reopened it then. */
  private openedSince(now: number): number {
    const probeExpiredAt = this.probeSentAt === undefined ? undefined : this.probeSentAt + this.probeTimeoutMs
    return probeExpiredAt !== undefined && now >= probeExpiredAt ? probeExpiredAt : this.openedAt
  }
}

export interface CircuitBreakersOptions extends CircuitBreakerOptions {
  /**
   * Most breakers kept; past it the least recently used clean one goes (a key called once, or
   * whose calls all succeed), else the least recently used.
   */
  maxBreakers?: number
}

/** The least recently used clean breaker's key other than `current`'s, else the least recently used key. */
const leastWorthKeeping = (breakers: Map<string, CircuitBreaker>, current: string): string => {
  for (const [key, breaker] of breakers) if (key !== current && breaker.clean) return key
  return breakers.keys().next().value!
}

/**
 * A breaker per key, made on first use: what fails behind one key (a backend target, a model
 * version on it, its shadow copies) never opens the circuit of another. A clean breaker is
 * forgotten before one that has failed: a flood of keys that answer (unknown names, say) must
 * not make the registry forget an open circuit and send traffic to a failing backend again.
 */
export const circuitBreakers = ({ maxBreakers = 1_024, ...options }: CircuitBreakersOptions = {}) => {
  const breakers = new Map<string, CircuitBreaker>()
  return function breakerFor(key: string): CircuitBreaker {
    let breaker = breakers.get(key)
    // Re-inserted on every use, so the Map's first key is the least recently used.
    if (breaker) breakers.delete(key)
    else breaker = new CircuitBreaker(options)
    breakers.set(key, breaker)
    if (breakers.size > maxBreakers) breakers.delete(leastWorthKeeping(breakers, key))
    return breaker
  }
}

export type CircuitBreakers = ReturnType<typeof circuitBreakers>
