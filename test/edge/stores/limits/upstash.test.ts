import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UpstashRateLimiter } from '../../../../edge/stores/limits/upstash.ts'
import { startUpstashRedis, type UpstashRedis } from '../../../dev/support/upstash-redis.ts'
import { busiestWindow } from './windows.ts'

const TOKEN = 'upstash-limiter-test-token'
const MINUTE = 60_000
const T0 = 28_000_000 * MINUTE
let upstash: UpstashRedis
let prefixes = 0

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN, commandTimeoutMs: 2_000 })
})

afterAll(async () => {
  upstash?.redis.signal('SIGCONT')
  await upstash?.stop()
})

/** Limiters (isolates) on one injected clock, each with its own key prefix per test; log lines collected. */
const isolates = ({ redis = upstash.client, timeoutMs = 2_000 }: { redis?: Redis; timeoutMs?: number } = {}) => {
  const time = { now: T0 }
  const logs: Array<{ level: string; msg: string }> = []
  const prefix = `rl-test-${++prefixes}`
  const make = () => new UpstashRateLimiter({ redis, timeoutMs, prefix, now: () => time.now, log: (line) => void logs.push(JSON.parse(line)) })
  return { time, logs, prefix, make }
}

describe('UpstashRateLimiter on a real redis-server', () => {
  it.each([1.1, 2])('admits the configured rate, shared by two isolates, at %s× offered load', async (load) => {
    const { time, make } = isolates()
    const pair = [make(), make()]
    const max = 60
    const minutes = 6
    const gap = MINUTE / (max * load)
    const admitted: number[] = []
    for (let i = 0; T0 + i * gap < T0 + minutes * MINUTE; i++) {
      time.now = Math.floor(T0 + i * gap)
      if ((await pair[i % 2].limit('caller', max, MINUTE)).success) admitted.push(time.now)
    }
    expect(busiestWindow(admitted, MINUTE)).toBeLessThanOrEqual(max)
    expect(admitted.length / (max * minutes)).toBeGreaterThanOrEqual(0.97)
  })

  it('answers with the window it keeps: limit, remaining, and when the oldest admission leaves', async () => {
    const { time, make } = isolates()
    const limiter = make()
    expect(await limiter.limit('caller', 2, MINUTE)).toEqual({ success: true, limit: 2, remaining: 1, resetMs: MINUTE })
    time.now = T0 + 15_000
    expect(await limiter.limit('caller', 2, MINUTE)).toEqual({ success: true, limit: 2, remaining: 0, resetMs: 45_000 })
    time.now = T0 + 20_000
    expect(await limiter.limit('caller', 2, MINUTE)).toEqual({ success: false, limit: 2, remaining: 0, resetMs: 40_000 })
    time.now = T0 + MINUTE
    expect(await limiter.limit('caller', 2, MINUTE)).toEqual({ success: true, limit: 2, remaining: 0, resetMs: 15_000 })
  })

  it('counts admissions made in the same millisecond apart: three checks at one instant with a limit of 2 admit 2', async () => {
    const { prefix, make } = isolates()
    const pair = [make(), make()]
    const results = []
    for (let i = 0; i < 3; i++) results.push(await pair[i % 2].limit('burst', 2, MINUTE))
    expect(results.map((r) => r.success)).toEqual([true, true, false])
    expect(await upstash.client.zcard(`${prefix}:burst:${MINUTE}`)).toBe(2)
  })

  it('falls back to the isolate window when Redis stalls: the real limit, nothing lifted, one log line per spell', async () => {
    // A budget no healthy call on a loaded machine comes near; the stall costs it once per failure
    // until the breaker opens (5 s in all).
    const { time, logs, prefix, make } = isolates({ timeoutMs: 1_000 })
    const limiter = make()
    // Two admissions through Redis; the isolate remembers them for when it must decide alone.
    for (let i = 0; i < 2; i++) expect((await limiter.limit('stalled', 5, MINUTE)).success).toBe(true)
    upstash.redis.signal('SIGSTOP')
    try {
      const during = []
      for (let i = 0; i < 20; i++) {
        time.now += 100
        during.push({ at: time.now, ...(await limiter.limit('stalled', 5, MINUTE)) })
      }
      expect(during.map((r) => [r.success, r.limit, r.remaining])).toEqual([[true, 5, 2], [true, 5, 1], [true, 5, 0], ...Array(17).fill([false, 5, 0])])
      // Room again when the first admission, made through Redis at T0, leaves the window.
      for (const r of during) expect(r.resetMs).toBe(T0 + MINUTE - r.at)
    } finally {
      upstash.redis.signal('SIGCONT')
    }
    expect(logs).toEqual([expect.objectContaining({ level: 'warn', msg: expect.stringContaining('per isolate') })])

    // Past the breaker's cooldown Redis is asked again, and the limit is shared again.
    time.now += 10_000
    expect(await limiter.limit('after', 5, MINUTE)).toMatchObject({ success: true, limit: 5, remaining: 4 })
    expect(await upstash.client.zcard(`${prefix}:after:${MINUTE}`)).toBe(1)
    expect(logs.map((l) => l.level)).toEqual(['warn', 'info'])
  })

  it('falls back on a Redis error (a refused token) and says so once', async () => {
    const wrongToken = new Redis({ url: upstash.adapter.url, token: 'not-the-token', retry: false, enableTelemetry: false })
    const { logs, make } = isolates({ redis: wrongToken })
    const limiter = make()
    const results = []
    for (let i = 0; i < 8; i++) results.push(await limiter.limit('refused', 3, MINUTE))
    expect(results.map((r) => [r.success, r.limit, r.remaining])).toEqual([[true, 3, 2], [true, 3, 1], [true, 3, 0], ...Array(5).fill([false, 3, 0])])
    for (const r of results) expect(r.resetMs).toBe(MINUTE)
    expect(logs).toHaveLength(1)
    expect(logs[0]).toMatchObject({ level: 'warn' })
  })
})
