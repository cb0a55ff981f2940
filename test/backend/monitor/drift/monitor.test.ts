import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { redisCountStore, type CountStore } from '../../../../backend/monitor/drift/count-store.ts'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { createLogger } from '../../../../backend/logger.ts'
import { startUpstashAdapter, type UpstashAdapter } from '../../../../dev/upstash-adapter/server.ts'
import { until } from '../../support/backend-process.ts'
import { startRedisServer, type RedisServer } from '../../../dev/support/redis-server.ts'
import { baseline, config, request, row } from './fixture.ts'

/**
 * Replicas merging through a real redis-server behind the local Upstash adapter: in-process
 * monitors, each its own replica, with the flushes called by the test.
 */

const TOKEN = 'drift-monitor-test-token-0123456789'
const NOW = Date.UTC(2030, 0, 1, 12, 0, 10)

let redis: RedisServer
let adapter: UpstashAdapter
let store: CountStore
let version = 0

beforeAll(async () => {
  redis = await startRedisServer()
  // Short, so a stopped Redis fails a flush soon.
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN, commandTimeoutMs: 300 })
  store = redisCountStore({ url: adapter.url, token: TOKEN })
})

afterAll(async () => {
  redis?.signal('SIGCONT')
  await adapter?.close()
  await redis?.stop()
})

/** Replicas of one fresh model version (keys apart from other tests), and a memory-only tally of everything they count. */
const setup = () => {
  const layout = driftLayout('toy', ++version, config, baseline)
  const replica = (s: CountStore) => new DriftMonitor({ logger: createLogger('silent'), store: s, now: () => NOW }).counter(layout)
  const tally = new DriftMonitor({ logger: createLogger('silent'), now: () => NOW }).counter(layout)
  /** Counts `n` varied rows and one request on a replica and on the tally. */
  const traffic = (counters: ReturnType<typeof replica>[], n: number, seed: number) => {
    const rows = Array.from({ length: n }, (_, i) => row((seed + i) % 12, (seed + i) % 6 === 5 ? undefined : (seed + i) % 5, (seed + i) % 2))
    const { inputs, outputs } = request(rows, rows.map((_, i) => ((seed + i) % 10) / 10))
    for (const counter of [...counters, tally]) {
      counter.record(inputs, n, outputs)
      counter.request(100 * (seed + 1), n, seed % 3 === 0)
    }
  }
  return { replica, tally, traffic }
}

describe('DriftMonitor with Redis', () => {
  it('merges replicas exactly: each view is the sum of all, unflushed counts included once', async () => {
    const { replica, tally, traffic } = setup()
    const a = replica(store)
    const b = replica(store)
    traffic([a], 30, 1)
    traffic([b], 20, 2)
    const expected = await tally.window(5)
    expect(expected.rows).toBe(50)
    // Neither replica has flushed. A view flushes its own replica's counts, then reads Redis:
    // it holds what the others have flushed so far (b: nothing yet), then all of it.
    expect((await a.window(5)).rows).toBe(30)
    expect(await b.window(5)).toEqual(expected)
    expect(await a.window(5)).toEqual(expected)
    traffic([a], 6, 9)
    expect(await a.window(5)).toEqual(await tally.window(5))
  })

  it('loses and doubles nothing when Redis stops and comes back', async () => {
    const { replica, tally, traffic } = setup()
    const monitor = (s: CountStore) => new DriftMonitor({ logger: createLogger('silent'), store: s, now: () => NOW })
    const writer = monitor(store)
    const a = writer.counter(tally.layout)
    traffic([a], 10, 3)
    await writer.flush()

    redis.signal('SIGSTOP')
    try {
      traffic([a], 7, 4)
      await expect(writer.flush()).rejects.toThrow()
      traffic([a], 5, 5)
      await expect(a.window(5)).rejects.toThrow()
    } finally {
      redis.signal('SIGCONT')
    }
    const probe = new Redis({ url: adapter.url, token: TOKEN, retry: false, enableTelemetry: false })
    await until(() => probe.ping().then(() => true, () => false))

    // The failed flush may have landed once Redis resumed: its resend, with the same id, adds nothing then.
    await writer.flush()
    await writer.flush()
    const expected = await tally.window(5)
    expect(expected.rows).toBe(22)
    expect(await replica(store).window(5)).toEqual(expected)
  })

  it('resends a flush of unknown outcome with its id: landed is not added again, refused is sent again', async () => {
    const { replica, tally, traffic } = setup()
    let fail: 'after' | 'before' | undefined
    const flaky: CountStore = {
      ...store,
      async apply(...args) {
        if (fail === 'before') throw new Error('connection refused')
        await store.apply(...args)
        if (fail === 'after') throw new Error('reply lost')
      },
    }
    const writer = new DriftMonitor({ logger: createLogger('silent'), store: flaky, now: () => NOW })
    const a = writer.counter(tally.layout)
    const reader = replica(store)

    fail = 'after'
    traffic([a], 9, 6)
    await expect(writer.flush()).rejects.toThrow('reply lost')
    fail = 'before'
    traffic([a], 4, 7)
    // The first flush is resent whole and refused; the 4 rows counted since wait behind it.
    await expect(writer.flush()).rejects.toThrow('connection refused')
    fail = undefined
    await writer.flush()
    expect(await reader.window(5)).toEqual(await tally.window(5))
    await writer.flush()
    expect((await reader.window(5)).rows).toBe(13)
  })

  it('flushes on close', async () => {
    const { replica, tally, traffic } = setup()
    const writer = new DriftMonitor({ logger: createLogger('silent'), store, now: () => NOW })
    traffic([writer.counter(tally.layout)], 11, 8)
    await writer.close()
    expect(await replica(store).window(5)).toEqual(await tally.window(5))
  })
})
