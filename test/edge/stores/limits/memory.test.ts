import { describe, expect, it } from 'vitest'
import { SlidingWindowLimiter } from '../../../../edge/stores/limits/memory.ts'
import { busiestWindow, seeded } from './windows.ts'

const MINUTE = 60_000
/** A minute boundary, so window offsets in the tests read plainly. */
const T0 = 28_000_000 * MINUTE

const clock = (start = T0) => {
  const c = { now: start, read: () => c.now }
  return c
}

/** Offers requests at `times` (ascending) to a fresh limiter; returns the times it admitted. */
const admittedAt = async (times: readonly number[], max: number, windowMs: number): Promise<number[]> => {
  const time = clock()
  const limiter = new SlidingWindowLimiter({ now: time.read })
  const admitted: number[] = []
  for (const at of times) {
    time.now = at
    if ((await limiter.limit('x', max, windowMs)).success) admitted.push(at)
  }
  return admitted
}

/**
 * Arrivals mixing what breaks approximate windows: bursts at one instant, clusters either side of
 * a window boundary, quiet spells, and steady trickles.
 */
const arrivals = (random: () => number, windowMs: number, max: number): number[] => {
  const times: number[] = []
  let at = T0 + Math.floor(random() * windowMs)
  while (times.length < 40 * max) {
    const pattern = random()
    if (pattern < 0.25) {
      for (let i = Math.floor(random() * 2 * max); i > 0; i--) times.push(at)
    } else if (pattern < 0.5) {
      const boundary = (Math.floor(at / windowMs) + 1) * windowMs
      for (let i = Math.floor(random() * 2 * max); i > 0; i--) times.push(boundary - 1 - Math.floor(random() * 50))
      times.sort((a, b) => a - b)
      at = boundary
      for (let i = Math.floor(random() * 2 * max); i > 0; i--) times.push(at + Math.floor(random() * 50))
      at += 50
    } else if (pattern < 0.6) {
      at += Math.floor(random() * 2 * windowMs)
    } else {
      const gap = Math.max(1, Math.floor((random() * 2 * windowMs) / max))
      for (let i = Math.floor(random() * 3 * max); i > 0; i--) times.push((at += gap))
    }
  }
  return times.sort((a, b) => a - b)
}

describe('SlidingWindowLimiter', () => {
  it('allows exactly max per window, counting down remaining', async () => {
    const limiter = new SlidingWindowLimiter({ now: clock().read })
    const results = []
    for (let i = 0; i < 4; i++) results.push(await limiter.limit('web', 3, MINUTE))
    expect(results).toEqual([
      { success: true, limit: 3, remaining: 2, resetMs: MINUTE },
      { success: true, limit: 3, remaining: 1, resetMs: MINUTE },
      { success: true, limit: 3, remaining: 0, resetMs: MINUTE },
      { success: false, limit: 3, remaining: 0, resetMs: MINUTE },
    ])
  })

  it('gives back each admission exactly one window after it was made', async () => {
    const time = clock()
    const limiter = new SlidingWindowLimiter({ now: time.read })
    for (const offset of [0, 10_000, 20_000]) {
      time.now = T0 + offset
      expect((await limiter.limit('web', 3, MINUTE)).success).toBe(true)
    }
    time.now = T0 + MINUTE - 1
    expect(await limiter.limit('web', 3, MINUTE)).toEqual({ success: false, limit: 3, remaining: 0, resetMs: 1 })
    time.now = T0 + MINUTE
    // The request at 0 s has left; the one at 10 s is the next to go.
    expect(await limiter.limit('web', 3, MINUTE)).toEqual({ success: true, limit: 3, remaining: 0, resetMs: 10_000 })
    expect((await limiter.limit('web', 3, MINUTE)).success).toBe(false)
    // At 80 s the requests at 10 s and 20 s have left; the one at 60 s stays until 120 s.
    time.now = T0 + MINUTE + 20_000
    expect(await limiter.limit('web', 3, MINUTE)).toEqual({ success: true, limit: 3, remaining: 1, resetMs: 40_000 })
  })

  it('admits no second burst across a fixed-window boundary', async () => {
    // A full burst just before a minute boundary, then the limit's own rate for two minutes.
    const burst = Array.from({ length: 600 }, () => T0 + MINUTE - 1)
    const trickle = Array.from({ length: 1_200 }, (_, i) => T0 + MINUTE + i * 100)
    const admitted = await admittedAt([...burst, ...trickle], 600, MINUTE)
    expect(busiestWindow(admitted, MINUTE)).toBe(600)
    // Nothing more until the burst has slid out, then the trickle is admitted in full.
    expect(admitted.filter((at) => at > T0 + MINUTE - 1 && at < T0 + 2 * MINUTE - 1)).toEqual([])
    expect(admitted.filter((at) => at >= T0 + 2 * MINUTE - 1)).toHaveLength(600)
  })

  it('never admits more than max in any rolling window, over random arrivals', async () => {
    const random = seeded(7)
    for (const [max, windowMs] of [[1, 1_000], [3, MINUTE], [10, 10_000], [600, MINUTE]] as const) {
      for (let run = 0; run < 5; run++) {
        const admitted = await admittedAt(arrivals(random, windowMs, max), max, windowMs)
        expect(busiestWindow(admitted, windowMs), `max ${max} run ${run}`).toBeLessThanOrEqual(max)
      }
    }
  })

  it('refuses a request only when the window it would complete already holds max', async () => {
    const random = seeded(11)
    for (const [max, windowMs] of [[1, 1_000], [3, MINUTE], [10, 10_000], [100, MINUTE]] as const) {
      const times = arrivals(random, windowMs, max)
      const admitted = await admittedAt(times, max, windowMs)
      // The exact rule, by brute force: admitted iff fewer than max admissions lie in (t − window, t].
      const expected: number[] = []
      for (const at of times) if (expected.filter((t) => t > at - windowMs).length < max) expected.push(at)
      expect(admitted, `max ${max}`).toEqual(expected)
    }
  })

  it('admits a steady offered load at or below the limit in full', async () => {
    for (const [max, windowMs] of [[1, 1_000], [3, MINUTE], [7, 10_000], [600, MINUTE]] as const) {
      for (const share of [1, 0.9, 0.5]) {
        const gap = Math.ceil(windowMs / (max * share))
        const times = Array.from({ length: 5 * max }, (_, i) => T0 + 17 + i * gap)
        expect(await admittedAt(times, max, windowMs), `max ${max} at ${share}`).toEqual(times)
      }
    }
  })

  it('keeps ids apart', async () => {
    const limiter = new SlidingWindowLimiter({ now: clock().read })
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(true)
    expect((await limiter.limit('a', 1, MINUTE)).success).toBe(false)
    expect((await limiter.limit('b', 1, MINUTE)).success).toBe(true)
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

  it('does not let a clock that steps back re-admit what the window still holds', async () => {
    const time = clock(T0 + 30_000)
    const limiter = new SlidingWindowLimiter({ now: time.read })
    await limiter.limit('a', 2, MINUTE)
    await limiter.limit('a', 2, MINUTE)
    time.now = T0
    expect((await limiter.limit('a', 2, MINUTE)).success).toBe(false)
    time.now = T0 + 30_000 + MINUTE
    expect((await limiter.limit('a', 2, MINUTE)).success).toBe(true)
  })

  it('refuses nonsense limits', async () => {
    const limiter = new SlidingWindowLimiter()
    await expect(limiter.limit('a', 0, MINUTE)).rejects.toThrow(RangeError)
    await expect(limiter.limit('a', 1.5, MINUTE)).rejects.toThrow(RangeError)
    await expect(limiter.limit('a', 1, 0)).rejects.toThrow(RangeError)
    expect(() => new SlidingWindowLimiter({ maxIds: 0 })).toThrow(RangeError)
  })

  it('keeps its promises: remaining requests fit now, and resetMs is exactly when the next one fits', async () => {
    const random = seeded(42)
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
