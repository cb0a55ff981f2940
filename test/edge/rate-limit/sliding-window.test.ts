import { describe, expect, it } from 'vitest'
import { SlidingWindowLimiter } from '../../../edge/rate-limit/sliding-window.ts'

const MINUTE = 60_000
/** A minute boundary, so window offsets in the tests read plainly. */
const T0 = 28_000_000 * MINUTE

const clock = (start = T0) => {
  const c = { now: start, read: () => c.now }
  return c
}

describe('SlidingWindowLimiter', () => {
  it('allows exactly max per window, counting down remaining', async () => {
    const time = clock()
    const limiter = new SlidingWindowLimiter({ now: time.read })
    const results = []
    for (let i = 0; i < 4; i++) results.push(await limiter.limit('web', 3, MINUTE))
    expect(results.map((r) => [r.success, r.limit, r.remaining])).toEqual([[true, 3, 2], [true, 3, 1], [true, 3, 0], [false, 3, 0]])
    expect(results[0].resetMs).toBe(MINUTE)
  })

  it('weights the previous window by its overlap as the window slides', async () => {
    const time = clock()
    const limiter = new SlidingWindowLimiter({ now: time.read })
    for (let i = 0; i < 3; i++) expect((await limiter.limit('web', 3, MINUTE)).success).toBe(true)
    // One window later the previous three still weigh fully: next room when 3·(1 − t/60 s) ≤ 2, at 20 s.
    time.now = T0 + MINUTE
    expect(await limiter.limit('web', 3, MINUTE)).toEqual({ success: false, limit: 3, remaining: 0, resetMs: 20_000 })
    time.now = T0 + MINUTE + 19_999
    expect((await limiter.limit('web', 3, MINUTE)).success).toBe(false)
    time.now = T0 + MINUTE + 20_000
    expect(await limiter.limit('web', 3, MINUTE)).toMatchObject({ success: true, remaining: 0 })
    // Half way through, the burst weighs 1.5, plus the request at 80 s: 2.5, no room for a whole one.
    time.now = T0 + MINUTE + 30_000
    expect((await limiter.limit('web', 3, MINUTE)).success).toBe(false)
    // At 120 s the burst has slid out; the request at 80 s still weighs fully, so two more fit.
    time.now = T0 + 2 * MINUTE
    const later = [await limiter.limit('web', 3, MINUTE), await limiter.limit('web', 3, MINUTE), await limiter.limit('web', 3, MINUTE)]
    expect(later.map((r) => r.success)).toEqual([true, true, false])
    // Idle for two windows: the full quota again.
    time.now = T0 + 5 * MINUTE
    expect(await limiter.limit('web', 3, MINUTE)).toMatchObject({ success: true, remaining: 2 })
  })

  it('keeps ids apart', async () => {
    const limiter = new SlidingWindowLimiter({ now: clock().read })
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(true)
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(false)
    expect((await limiter.limit('b', 1, MINUTE)).success).toBe(true)
  })

  it('with max 1, waits out both windows the request overlaps', async () => {
    const time = clock(T0 + 10_000)
    const limiter = new SlidingWindowLimiter({ now: time.read })
    expect(await limiter.limit('a', 1, MINUTE)).toEqual({ success: true, limit: 1, remaining: 0, resetMs: 2 * MINUTE - 10_000 })
    time.now = T0 + 2 * MINUTE - 1
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(false)
    time.now = T0 + 2 * MINUTE
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(true)
  })

  it('forgets the least recently used id past maxIds', async () => {
    const limiter = new SlidingWindowLimiter({ now: clock().read, maxIds: 2 })
    await limiter.limit('a', 1, MINUTE)
    await limiter.limit('b', 1, MINUTE)
    await limiter.limit('a', 1, MINUTE)
    await limiter.limit('c', 1, MINUTE)
    expect(limiter.size).toBe(2)
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(false)
    expect((await limiter.limit('b', 1, MINUTE)).success).toBe(true)
  })

  it('refuses nonsense limits', async () => {
    const limiter = new SlidingWindowLimiter()
    await expect(limiter.limit('a', 0, MINUTE)).rejects.toThrow(RangeError)
    await expect(limiter.limit('a', 1.5, MINUTE)).rejects.toThrow(RangeError)
    await expect(limiter.limit('a', 1, 0)).rejects.toThrow(RangeError)
    expect(() => new SlidingWindowLimiter({ maxIds: 0 })).toThrow(RangeError)
  })

  it('keeps its promises: remaining requests fit now, and resetMs is exactly when the next one fits', async () => {
    // A seeded generator, so the run is the same every time.
    let seed = 42
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    for (const [max, windowMs] of [[1, 1000], [3, MINUTE], [7, 10_000], [100, MINUTE]] as const) {
      const time = clock(T0 + Math.floor(random() * windowMs))
      const limiter = new SlidingWindowLimiter({ now: time.read })
      for (let step = 0; step < 400; step++) {
        time.now += Math.floor(random() ** 3 * windowMs * 0.5)
        let result = await limiter.limit('x', max, windowMs)
        if (result.remaining > 0) {
          // Exactly `remaining` more fit at this instant.
          for (let i = 0; i < result.remaining; i++) expect((await limiter.limit('x', max, windowMs)).success).toBe(true)
          result = await limiter.limit('x', max, windowMs)
          expect(result.success).toBe(false)
        }
        expect(result.resetMs).toBeGreaterThanOrEqual(1)
        const at = time.now
        if (result.resetMs > 1) {
          time.now = at + result.resetMs - 1
          expect((await limiter.limit('x', max, windowMs)).success, `max ${max} step ${step}`).toBe(false)
        }
        time.now = at + result.resetMs
        expect((await limiter.limit('x', max, windowMs)).success, `max ${max} step ${step}`).toBe(true)
      }
    }
  })
})
