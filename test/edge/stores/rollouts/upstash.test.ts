import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UpstashRateLimiter } from '../../../../edge/stores/limits/upstash.ts'
import { rolloutSchema } from '../../../../edge/rollout/rollout.ts'
import { CachedRolloutStore } from '../../../../edge/stores/rollouts/cached.ts'
import { UpstashRolloutStore } from '../../../../edge/stores/rollouts/upstash.ts'
import { startUpstashRedis, type UpstashRedis } from '../../../dev/support/upstash-redis.ts'

const TOKEN = 'rollout-store-test-token'
let upstash: UpstashRedis

const rollout = (canary: number) =>
  rolloutSchema.parse({ salt: 'exp', arms: [{ variant: 'stable', version: 2, weight: 100 - canary }, { variant: 'canary', version: 3, weight: canary }] })

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
})

afterAll(async () => {
  await upstash?.stop()
})

describe('UpstashRolloutStore on a real redis-server', () => {
  it('stores rollouts with revisions and refuses a stale compare-and-set', async () => {
    const store = new UpstashRolloutStore(upstash.client)
    expect(await store.get('m1')).toBeUndefined()
    expect(await store.compareAndSet('m1', 0, rollout(1))).toBe(1)
    expect(await store.compareAndSet('m1', 0, rollout(5))).toBeUndefined()
    expect(await store.compareAndSet('m1', 1, rollout(5))).toBe(2)
    expect(await store.get('m1')).toEqual({ revision: 2, rollout: rollout(5) })
  })

  it('lets exactly one of two concurrent writers win from the same revision', async () => {
    const store = new UpstashRolloutStore(upstash.client)
    const results = await Promise.all([store.compareAndSet('m2', 0, rollout(20)), store.compareAndSet('m2', 0, rollout(50))])
    expect(results.filter((r) => r === 1)).toHaveLength(1)
    expect(results.filter((r) => r === undefined)).toHaveLength(1)
  })

  it('refuses to route by a stored rollout that is invalid', async () => {
    await upstash.client.hset('rollout:bad', { revision: 1, rollout: JSON.stringify({ salt: 's', arms: [{ variant: 'a', version: 1, weight: 30 }] }) })
    await expect(new UpstashRolloutStore(upstash.client).get('bad')).rejects.toThrow(/sum to 30/)
  })

  it('serves from the isolate cache until the TTL, then sees another isolate\'s change', async () => {
    let now = 0
    const shared = new UpstashRolloutStore(upstash.client)
    const isolateA = new CachedRolloutStore(shared, { ttlMs: 1_000, now: () => now })
    const isolateB = new CachedRolloutStore(shared, { ttlMs: 1_000, now: () => now })
    await isolateA.compareAndSet('m3', 0, rollout(1))
    expect((await isolateB.get('m3'))?.rollout).toEqual(rollout(1))
    await isolateA.compareAndSet('m3', 1, rollout(20))
    expect((await isolateB.get('m3'))?.rollout).toEqual(rollout(1))
    now = 1_000
    expect((await isolateB.get('m3'))?.rollout).toEqual(rollout(20))
  })

  it('reads past the isolate cache for a writer, and keeps what it read', async () => {
    const shared = new UpstashRolloutStore(upstash.client)
    const isolateA = new CachedRolloutStore(shared, { ttlMs: 60_000 })
    const isolateB = new CachedRolloutStore(shared, { ttlMs: 60_000 })
    await isolateA.compareAndSet('m4', 0, rollout(1))
    await isolateB.get('m4')
    await isolateA.compareAndSet('m4', 1, rollout(20))
    expect(await isolateB.get('m4', { fresh: true })).toEqual({ rollout: rollout(20), revision: 2 })
    expect(await isolateB.get('m4')).toEqual({ rollout: rollout(20), revision: 2 })
  })
})

describe('UpstashRateLimiter on a real redis-server', () => {
  it('allows exactly the limit per key across limiter instances (isolates), then refuses', async () => {
    const prefix = `rl-${Date.now()}`
    const a = new UpstashRateLimiter({ redis: upstash.client, timeoutMs: 2_000, prefix })
    const b = new UpstashRateLimiter({ redis: upstash.client, timeoutMs: 2_000, prefix })
    const outcomes: boolean[] = []
    for (let i = 0; i < 6; i++) outcomes.push((await (i % 2 === 0 ? a : b).limit('caller-1', 4, 60_000)).success)
    expect(outcomes).toEqual([true, true, true, true, false, false])
    const other = await a.limit('caller-2', 4, 60_000)
    expect(other).toMatchObject({ success: true, limit: 4, remaining: 3 })
    const refused = await b.limit('caller-1', 4, 60_000)
    expect(refused.resetMs).toBeGreaterThan(0)
    expect(refused.resetMs).toBeLessThanOrEqual(60_000)
  })
})
