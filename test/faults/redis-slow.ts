import { afterEach, beforeEach, vi } from 'vitest'
import type { Redis } from '@upstash/redis'

/**
 * A stand-in for `@upstash/redis` whose every command (and every pipeline or transaction's
 * `exec`) answers `answer(command)` after `delayMs()` (read per command), on timers: with fake timers a test puts the
 * answer just under or just over a budget without waiting for it.
 */
export const slowRedis = (delayMs: () => number, answer: (command: string) => unknown = () => null): Redis => {
  const later = (command: string) => new Promise((resolve) => setTimeout(() => resolve(answer(command)), delayMs()))
  const batch = (): object => new Proxy({}, { get: (_, name) => (name === 'exec' ? () => later('exec') : () => batch()) })
  return new Proxy({}, {
    get: (_, name) => (name === 'pipeline' || name === 'multi' ? () => batch() : () => later(String(name))),
  }) as unknown as Redis
}

/** Runs each test of the calling file on fake timers, so `slowRedis` delays pass only when told. */
export const useFakeTimersPerTest = (): void => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })
}

/** Lets `ms` of fake time pass, then settles `work` (its rejection included) for the test to look at. */
export const settledAfter = async <T>(ms: number, work: Promise<T>): Promise<{ value: T } | { error: unknown }> => {
  const settled = work.then((value) => ({ value }), (error: unknown) => ({ error }))
  await vi.advanceTimersByTimeAsync(ms)
  return settled
}
