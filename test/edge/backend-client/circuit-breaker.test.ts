import { describe, expect, it } from 'vitest'
import { CircuitBreaker } from '../../../edge/backend-client/circuit-breaker.ts'

describe('CircuitBreaker', () => {
  it('opens after consecutive failures, lets one probe through after the cooldown, closes on success', () => {
    let now = 0
    const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 1_000, now: () => now })
    breaker.failure()
    breaker.failure()
    expect(breaker.allow()).toBe(true)
    breaker.failure()
    expect(breaker.state).toBe('open')
    expect(breaker.allow()).toBe(false)
    expect(breaker.retryAfterSeconds()).toBe(1)
    now = 1_000
    expect(breaker.state).toBe('half-open')
    expect(breaker.allow()).toBe(true)
    expect(breaker.state).toBe('probing')
    expect(breaker.allow()).toBe(false)
    breaker.success()
    expect(breaker.state).toBe('closed')
    expect(breaker.allow()).toBe(true)
  })

  it('re-opens when the probe fails', () => {
    let now = 0
    const breaker = new CircuitBreaker({ failureThreshold: 1, cooldownMs: 500, now: () => now })
    breaker.failure()
    now = 600
    expect(breaker.allow()).toBe(true)
    breaker.failure()
    expect(breaker.state).toBe('open')
    expect(breaker.allow()).toBe(false)
  })

  it('forgets failures that a success interrupts', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 2 })
    breaker.failure()
    breaker.success()
    breaker.failure()
    expect(breaker.state).toBe('closed')
  })

  it('counts a probe that never reports as failed once probeTimeoutMs has passed, then lets the next one through after a cooldown', () => {
    let now = 0
    const breaker = new CircuitBreaker({ failureThreshold: 1, cooldownMs: 1_000, probeTimeoutMs: 5_000, now: () => now })
    breaker.failure()
    now = 1_000
    expect(breaker.allow()).toBe(true)
    now = 5_999
    expect(breaker.state).toBe('probing')
    expect(breaker.allow()).toBe(false)
    expect(breaker.retryAfterSeconds()).toBe(1)
    now = 6_000
    expect(breaker.state).toBe('open')
    expect(breaker.retryAfterSeconds()).toBe(1)
    now = 6_999
    expect(breaker.allow()).toBe(false)
    now = 7_000
    expect(breaker.allow()).toBe(true)
    breaker.success()
    expect(breaker.state).toBe('closed')
  })

  it('says exactly how many whole seconds remain of the cooldown in Retry-After, rounded up', () => {
    let now = 0
    const breaker = new CircuitBreaker({ failureThreshold: 1, cooldownMs: 5_000, now: () => now })
    breaker.failure()
    // Expected values by hand: 5 s cooldown from 0 ms; asked at t, ceil((5000 - t) / 1000).
    const asked = [[0, 5], [1_500, 4], [1_700, 4], [2_000, 3], [2_001, 3], [4_001, 1]]
    for (const [at, seconds] of asked) {
      now = at
      expect(breaker.retryAfterSeconds(), `at ${at} ms`).toBe(seconds)
    }
  })
})
