import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from '@upstash/redis'
import { binIndex } from '../../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, rowLogLoss } from '../../../shared/quality.ts'
import { type GroundTruthStore, MemoryGroundTruth, type ServedRecord, UpstashGroundTruth, delayBucket } from '../../../edge/quality/store.ts'
import { startUpstashRedis, type UpstashRedis } from '../../infra/support/upstash-redis.ts'

const TOKEN = 'ground-truth-store-test-token-01'
let upstash: UpstashRedis

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
})

afterAll(async () => {
  await upstash?.stop()
})

const record = (scores: number[], version = 2): ServedRecord => ({ model: 'm', version, variant: 'stable', at: 0, labels: ['no', 'yes'], scores })

const stores: Array<[string, () => GroundTruthStore]> = [
  ['in memory', () => new MemoryGroundTruth()],
  // The edge's own client settings: stored strings come back as strings.
  ['in Redis', () => new UpstashGroundTruth(new Redis({ url: upstash.adapter.url, token: TOKEN, retry: false, enableTelemetry: false, automaticDeserialization: false }), { timeoutMs: 2_000, failureFlushMs: 10 })],
  // The isolate's client deserializes: records come back parsed and hashes as objects.
  ['in Redis through a deserializing client', () => new UpstashGroundTruth(upstash.client, { timeoutMs: 2_000, failureFlushMs: 10 })],
]

describe.each(stores)('the ground-truth store %s', (_, make) => {
  it('keeps a served record for its TTL and finds it by request id', async () => {
    const store = make()
    const id = `rec-${Math.random().toString(36).slice(2)}`
    await store.serve(id, record([0.2, 0.9]), 60)
    expect(await store.records([id, `${id}-unknown`])).toEqual([record([0.2, 0.9]), undefined])
  })

  it('marks an instance labelled once: a repeat says so, a record gone says so', async () => {
    const store = make()
    const id = `mark-${Math.random().toString(36).slice(2)}`
    await store.serve(id, record([0.2, 0.9]), 60)
    expect(await store.mark([{ requestId: id, index: 0 }, { requestId: id, index: 1 }, { requestId: id, index: 0 }, { requestId: `${id}-x`, index: 0 }])).toEqual(['first', 'first', 'repeat', 'gone'])
    await store.unmark([{ requestId: id, index: 1 }])
    expect(await store.mark([{ requestId: id, index: 1 }])).toEqual(['first'])
  })

  it('sums label counts per bin over the minutes of a window, with edge failures, and nothing outside it', async () => {
    const store = make()
    const model = `sum-${Math.random().toString(36).slice(2)}`
    const label = (minute: number, score: number, positive: boolean, delaySeconds = 30) => ({ model, version: 3, minute, score, positive, delaySeconds })
    await store.count([label(100, 0.92, true), label(100, 0.91, false, 7_200), label(101, 0.1, false), label(103, 0.1, true)])
    await Promise.all([store.edgeFailure(model, 3, 101), store.edgeFailure(model, 3, 101), store.edgeFailure(model, 4, 101)])
    const w = await store.window(model, 3, 100, 102)
    const high = binIndex(PREDICTION_EDGES, 0.92)
    const low = binIndex(PREDICTION_EDGES, 0.1)
    expect(w.bins[high]).toEqual({ rows: 2, positives: 1 })
    expect(w.bins[low]).toEqual({ rows: 1, positives: 0 })
    expect(w.bins.reduce((s, b) => s + b.rows, 0)).toBe(3)
    expect(w.scoreSums[high]).toBeCloseTo(1.83, 9)
    expect(w.logLossSum).toBeCloseTo(rowLogLoss(0.92, true) + rowLogLoss(0.91, false) + rowLogLoss(0.1, false), 9)
    expect(w.delays[delayBucket(30)]).toBe(2)
    expect(w.delays[delayBucket(7_200)]).toBe(1)
    expect(w.edgeFailures).toBe(2)
  })
})

describe('the Redis store', () => {
  it('writes the edge failures of one flush interval in one round trip, each caller waiting for it', async () => {
    const redis = new Redis({ url: upstash.adapter.url, token: TOKEN, retry: false, enableTelemetry: false, automaticDeserialization: false })
    let pipelines = 0
    const counting = new Proxy(redis, { get: (target, name, receiver) => (name === 'pipeline' ? () => (pipelines++, target.pipeline()) : Reflect.get(target, name, receiver)) })
    const store = new UpstashGroundTruth(counting, { timeoutMs: 2_000, failureFlushMs: 20 })
    const model = `batch-${Math.random().toString(36).slice(2)}`
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.edgeFailure(model, 1 + (i % 2), 7)))
    expect(pipelines).toBe(1)
    expect((await store.window(model, 1, 7, 7)).edgeFailures).toBe(25)
    expect((await store.window(model, 2, 7, 7)).edgeFailures).toBe(25)
  })
})

describe('the in-memory store', () => {
  it('forgets a record past its TTL, and the oldest past its size bound', async () => {
    let now = 0
    const store = new MemoryGroundTruth({ maxRecords: 2, now: () => now })
    await store.serve('aaaaaaaa', record([0.5]), 10)
    await store.serve('bbbbbbbb', record([0.5]), 100)
    await store.serve('cccccccc', record([0.5]), 100)
    expect((await store.records(['aaaaaaaa', 'bbbbbbbb', 'cccccccc'])).map(Boolean)).toEqual([false, true, true])
    now = 100_001
    expect((await store.records(['bbbbbbbb'])).map(Boolean)).toEqual([false])
    expect(await store.mark([{ requestId: 'cccccccc', index: 0 }])).toEqual(['gone'])
  })
})
