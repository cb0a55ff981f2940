import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { RequestMetrics, REQUEST_METRICS_HASH, UpstashTally } from '../../edge/pipeline/request-metrics/store.ts'
import { startUpstashRedis, type UpstashRedis } from '../infra/support/upstash-redis.ts'
import { startLateReplies, type LateReplies } from './support/late-replies.ts'

/**
 * The edge's counters against a real redis-server behind the Upstash adapter, through a proxy that
 * applies every command at once but holds its reply: a flush that "timed out" has landed.
 */

const TOKEN = 'edge-counters-late-writes-token'
const REQUESTS_FIELD = 'requests credit-risk 2 stable 200 backend'
const ok = { model: 'credit-risk', version: '2', variant: 'stable', code: 200, servedBy: 'backend' as const, seconds: 0.02 }

let store: UpstashRedis
let late: LateReplies

/** Polls `read` until it gives `want` or `ms` pass (a bound for a loaded machine, not a timing claim). */
const eventually = async <T>(read: () => Promise<T>, want: T, ms = 5_000): Promise<T> => {
  const stopAt = Date.now() + ms
  let value = await read()
  while (value !== want && Date.now() < stopAt) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    value = await read()
  }
  return value
}

/** A client on the proxy, built as the edge's isolate builds its own. */
const viaProxy = () => new Redis({ url: late.url, token: TOKEN, retry: false, enableTelemetry: false })

const counted = async (name = REQUESTS_FIELD): Promise<number> => Number((await store.client.hget(REQUEST_METRICS_HASH, name)) ?? 0)

beforeAll(async () => {
  store = await startUpstashRedis({ token: TOKEN })
  late = await startLateReplies(store.adapter.url)
})
afterAll(async () => {
  await late.close()
  await store.stop()
})
beforeEach(async () => {
  late.holdMs = () => 0
  await store.client.flushall()
})

describe('edge request metrics, flush replies held past the budget', () => {
  it('a flush that timed out but landed is not counted again when the next flush resends it', async () => {
    const lines: string[] = []
    const metrics = new RequestMetrics({ shared: new UpstashTally(viaProxy(), { timeoutMs: 100 }), log: (line) => lines.push(line) })
    late.holdMs = () => 400
    metrics.request(ok)
    await metrics.flush()
    // The reply never came in time, yet Redis applied the flush.
    expect(await eventually(counted, 1)).toBe(1)
    expect(lines).toHaveLength(1)
    late.holdMs = () => 0
    await metrics.flush()
    expect(await counted()).toBe(1)
    // What comes after the write in doubt is a write of its own.
    metrics.request(ok)
    await metrics.flush()
    expect(await counted()).toBe(2)
    expect((await metrics.totals()).get(REQUESTS_FIELD)).toBe(2)
  })

  it('a count recorded while a flush is in flight goes out once that flush ends, not at some later request', async () => {
    const metrics = new RequestMetrics({ shared: new UpstashTally(viaProxy(), { timeoutMs: 1_000 }), flushEveryMs: 100, log: () => {} })
    late.holdMs = () => 300
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
