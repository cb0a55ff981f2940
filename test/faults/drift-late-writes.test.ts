import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisCountStore } from '../../backend/monitor/drift/count-store.ts'
import { driftLayout } from '../../backend/monitor/drift/layout.ts'
import { DriftMonitor } from '../../backend/monitor/drift/monitor.ts'
import { createLogger } from '../../backend/logger.ts'
import { WriteInDoubt } from '../../shared/write-once.ts'
import { until } from '../backend/support/backend-process.ts'
import { baseline, config, request, row } from '../backend/monitor/drift/fixture.ts'
import { startUpstashRedis, type UpstashRedis } from '../dev/support/upstash-redis.ts'
import { startLateReplies, type LateReplies } from './support/late-replies.ts'

/**
 * Drift flushes that time out but land, against a real redis-server behind the local Upstash
 * adapter, through a proxy that holds either the reply (the flush is applied at once) or the
 * request itself (it is applied only after the client gave up, and after its resend).
 */

const TOKEN = 'drift-late-writes-token-0123456789'
const NOW = Date.UTC(2030, 0, 1, 12, 0, 10)
const BUDGET_MS = 100
/** Well past the budget, so the flush is in doubt when the next one starts. */
const LATE_MS = 1_000

let store: UpstashRedis
let late: LateReplies
let version = 0

beforeAll(async () => {
  store = await startUpstashRedis({ token: TOKEN })
  late = await startLateReplies(store.adapter.url)
})
afterAll(async () => {
  await late?.close()
  await store?.stop()
})

/** A replica writing through the proxy, a reader straight to Redis, for a fresh model version. */
const setup = () => {
  const layout = driftLayout('toy', ++version, config, baseline)
  const monitor = (url: string) => new DriftMonitor({ logger: createLogger('silent'), store: redisCountStore({ url, token: TOKEN, timeoutMs: BUDGET_MS }), now: () => NOW })
  const writer = monitor(late.url)
  const counter = writer.counter(layout)
  const record = (n: number) => {
    const rows = Array.from({ length: n }, (_, i) => row(i % 12, i % 5, i % 2))
    const { inputs, outputs } = request(rows, rows.map((_, i) => (i % 10) / 10))
    counter.record(inputs, n, outputs)
  }
  const counted = async () => (await monitor(store.adapter.url).counter(layout).window(5)).rows
  /** `n` rows observed under `id` (the edge's cached rows, backend/routes/observe.ts), with no resend. */
  const observe = (id: string, n: number) => {
    const rows = Array.from({ length: n }, (_, i) => row(i % 12, i % 5, i % 2))
    const { inputs, outputs } = request(rows, rows.map((_, i) => (i % 10) / 10))
    return counter.observe(id, inputs, n, outputs)
  }
  /** Resends under `id` until Redis answers, as the edge does: under load a resend may be in doubt too. */
  const resend = async (id: string, n: number) => {
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        return await observe(id, n)
      } catch (err) {
        if (!(err instanceof WriteInDoubt)) throw err
      }
    }
    throw new Error(`no answer from Redis for ${id} in 20 attempts`)
  }
  return { writer, record, counted, observe, resend }
}

const holdFirst = (ms: number) => {
  let first = true
  return () => {
    const hold = first ? ms : 0
    first = false
    return hold
  }
}

describe('drift flushes whose Redis write lands late', () => {
  it('a flush applied at once but answered late is not counted again: 10 rows recorded, 10 counted', async () => {
    const { writer, record, counted } = setup()
    late.holdMs = holdFirst(LATE_MS)
    try {
      record(10)
      await expect(writer.flush()).rejects.toThrow()
      await writer.flush()
    } finally {
      late.holdMs = () => 0
    }
    expect(await counted()).toBe(10)
  })

  it('a flush that reaches Redis only after its resend is applied once, and rows recorded meanwhile are not lost', async () => {
    const { writer, record, counted } = setup()
    late.forwardAfterMs = holdFirst(LATE_MS)
    try {
      record(10)
      await expect(writer.flush()).rejects.toThrow()
      record(4)
      // Resends the flush in doubt (it applies now), then the 4 rows recorded since.
      await writer.flush()
      // The first attempt reaches Redis now.
      await until(() => late.heldRequests === 0)
    } finally {
      late.forwardAfterMs = () => 0
    }
    expect(await counted()).toBe(14)
  })
})

describe('observed rows (the edge cache\'s) whose Redis write lands late', () => {
  it('applied at once but answered late: the resend under the same id adds nothing', async () => {
    const { observe, resend, counted } = setup()
    late.holdMs = holdFirst(LATE_MS)
    try {
      await expect(observe('req-a:v1:01', 6)).rejects.toBeInstanceOf(WriteInDoubt)
      await resend('req-a:v1:01', 6)
    } finally {
      late.holdMs = () => 0
    }
    expect(await counted()).toBe(6)
    // Another observation is another id.
    await resend('req-b:v1:02', 6)
    expect(await counted()).toBe(12)
  })

  it('reaching Redis only after its resend: applied once', async () => {
    const { observe, resend, counted } = setup()
    late.forwardAfterMs = holdFirst(LATE_MS)
    try {
      await expect(observe('req-c:v1:03', 6)).rejects.toBeInstanceOf(WriteInDoubt)
      await resend('req-c:v1:03', 6)
      await until(() => late.heldRequests === 0)
    } finally {
      late.forwardAfterMs = () => 0
    }
    expect(await counted()).toBe(6)
  })
})
