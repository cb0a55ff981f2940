import { describe, expect, it } from 'vitest'
import { RequestMetrics, REQUEST_METRICS_HASH } from '../../edge/stores/tallies/tally.ts'
import { UpstashTally } from '../../edge/stores/tallies/upstash.ts'
import { EDGE_FAILURES } from '../../edge/stores/ground-truth/ground-truth-store.ts'
import { UpstashGroundTruth } from '../../edge/stores/ground-truth/upstash.ts'
import { eventually, useLateRedis } from './support/late-redis.ts'

/**
 * The edge's counters against a real redis-server behind the Upstash adapter, through a proxy that
 * applies every command at once but holds its reply: a flush that "timed out" has landed.
 */

const REQUESTS_FIELD = 'requests credit-risk 2 stable 200 backend'
const ok = { model: 'credit-risk', version: '2', variant: 'stable', code: 200, servedBy: 'backend' as const, seconds: 0.02 }

const redis = useLateRedis('edge-counters-late-writes-token')

const counted = async (name = REQUESTS_FIELD): Promise<number> => Number((await redis.store.client.hget(REQUEST_METRICS_HASH, name)) ?? 0)

describe('edge request metrics, flush replies held past the budget', () => {
  it('a flush that timed out but landed is not counted again when the next flush resends it', async () => {
    const lines: string[] = []
    const metrics = new RequestMetrics({ shared: new UpstashTally(redis.viaProxy(), { timeoutMs: 100 }), log: (line) => lines.push(line) })
    redis.late.holdMs = () => 400
    metrics.request(ok)
    await metrics.flush()
    // The reply never came in time, yet Redis applied the flush.
    expect(await eventually(counted, 1)).toBe(1)
    expect(lines).toHaveLength(1)
    redis.late.holdMs = () => 0
    await metrics.flush()
    expect(await counted()).toBe(1)
    // What comes after the write in doubt is a write of its own.
    metrics.request(ok)
    await metrics.flush()
    expect(await counted()).toBe(2)
    expect((await metrics.totals()).get(REQUESTS_FIELD)).toBe(2)
  })

  it('a count recorded while a flush is in flight goes out once that flush ends, not at some later request', async () => {
    const metrics = new RequestMetrics({ shared: new UpstashTally(redis.viaProxy(), { timeoutMs: 1_000 }), flushEveryMs: 100, log: () => {} })
    redis.late.holdMs = () => 300
    metrics.request(ok)
    const first = metrics.flushDue()
    // Past the first interval: its flush is in flight, its reply held.
    await new Promise((resolve) => setTimeout(resolve, 150))
    metrics.request(ok)
    const second = metrics.flushDue()
    await Promise.all([first, second])
    // Nothing else is recorded: no later request would start a flush for the second count.
    expect(await eventually(counted, 2)).toBe(2)
  })
})

describe('edge failures (calls the backend never answered), flush replies held past the budget', () => {
  // The current minute: counts for a minute older than its retention (a day) are not kept.
  const MINUTE = Math.floor(Date.now() / 60_000)
  const failures = async (): Promise<number> => Number((await redis.store.client.hget(`quality:credit-risk:3:${MINUTE}`, EDGE_FAILURES)) ?? 0)

  it('a flush in doubt goes again with its id before the next batch: counted once, and not left to land whenever it does', async () => {
    const store = new UpstashGroundTruth(redis.viaProxy(), { timeoutMs: 100, failureFlushMs: 10 })
    let writes = 0
    // The first write reaches Redis only after its sender gave up on it; the rest at once.
    redis.late.forwardAfterMs = () => (++writes === 1 ? 1_500 : 0)
    // In doubt after 100 ms, resent with its id in the same background task: that resend lands it.
    await store.edgeFailure('credit-risk', 3, MINUTE)
    expect(writes).toBe(2)
    expect(await failures()).toBe(1)
    await store.edgeFailure('credit-risk', 3, MINUTE)
    expect(await failures()).toBe(2)
    expect(writes).toBe(3)
    // The first attempt lands at last, and changes nothing.
    expect(await eventually(async () => redis.late.heldRequests, 0)).toBe(0)
    expect(await failures()).toBe(2)
  })

  it('a batch Redis never confirms is sent a bounded number of times, then goes first with the next count', async () => {
    const store = new UpstashGroundTruth(redis.viaProxy(), { timeoutMs: 100, failureFlushMs: 10 })
    const key = MINUTE + 1
    const counted = async (): Promise<number> => Number((await redis.store.client.hget(`quality:credit-risk:3:${key}`, EDGE_FAILURES)) ?? 0)
    let writes = 0
    // Every reply held past the budget (the writes themselves land at once) until released.
    let holding = true
    redis.late.holdMs = () => (++writes, holding ? 400 : 0)
    redis.late.forwardAfterMs = () => 0
    await expect(store.edgeFailure('credit-risk', 3, key)).rejects.toThrow()
    expect(writes).toBe(3)
    holding = false
    await store.edgeFailure('credit-risk', 3, key)
    // Three sends of the first batch landed once; the second count went after it.
    expect(await counted()).toBe(2)
  })
})
