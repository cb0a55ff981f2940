import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from '@upstash/redis'
import { binIndex } from '../../../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, rowLogLoss } from '../../../../shared/quality.ts'
import type { GroundTruthStore, LabelCount, LabelWrite, Served, ServedKey, ServedRecord } from '../../../../edge/stores/ground-truth/ground-truth-store.ts'
import { MemoryGroundTruth } from '../../../../edge/stores/ground-truth/memory.ts'
import { UpstashGroundTruth } from '../../../../edge/stores/ground-truth/upstash.ts'
import { startUpstashRedis, type UpstashRedis } from '../../../dev/support/upstash-redis.ts'

const TOKEN = 'ground-truth-store-test-token-01'
let upstash: UpstashRedis

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
})

afterAll(async () => {
  await upstash?.stop()
})

const record = (scores: number[], version = 2): ServedRecord => ({ model: 'm', version, variant: 'stable', at: 0, labels: ['no', 'yes'], scores })
const key = (requestId: string, tenant = 'shop'): ServedKey => ({ tenant, requestId })
const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2)}`

/** A label write for instance `index` of the record read under `at`. */
const write = (at: ServedKey, served: Served, index: number, label: string, count: Partial<LabelCount> = {}): LabelWrite => ({
  key: at, servedId: served.servedId, index, label,
  count: { model: served.model, version: served.version, minute: 100, score: served.scores[index], positive: label === 'yes', delaySeconds: 30, ...count },
})

const stores: Array<[string, () => GroundTruthStore]> = [
  ['in memory', () => new MemoryGroundTruth()],
  // The edge's own client settings: stored strings come back as strings.
  ['in Redis', () => new UpstashGroundTruth(new Redis({ url: upstash.adapter.url, token: TOKEN, retry: false, enableTelemetry: false, automaticDeserialization: false }), { timeoutMs: 2_000, failureFlushMs: 10 })],
  // The isolate's client deserializes: records come back parsed and hashes as objects.
  ['in Redis through a deserializing client', () => new UpstashGroundTruth(upstash.client, { timeoutMs: 2_000, failureFlushMs: 10 })],
]

describe.each(stores)('the ground-truth store %s', (_, make) => {
  it("keeps a served record for its TTL and finds it by tenant and request id, not by another tenant's", async () => {
    const store = make()
    const id = unique('rec')
    await store.serve(key(id), record([0.2, 0.9]), 60)
    const [found, unknown, foreign] = await store.records([key(id), key(`${id}-unknown`), key(id, 'other')])
    expect(found).toEqual({ ...record([0.2, 0.9]), servedId: expect.any(String) })
    expect([unknown, foreign]).toEqual([undefined, undefined])
  })

  it('counts an instance\'s first label once: the same label again is "already", another is a duplicate, a record gone is gone', async () => {
    const store = make()
    const model = unique('label')
    const at = key(unique('lab'))
    await store.serve(at, { ...record([0.2, 0.9]), model }, 60)
    const [served] = await store.records([at])
    expect(await store.label([write(at, served!, 0, 'no'), write(at, served!, 1, 'yes'), write(at, served!, 0, 'no'), write(at, served!, 0, 'yes'), write(key(`${at.requestId}-x`), served!, 0, 'no')]))
      .toEqual(['counted', 'counted', 'already', 'duplicate', 'gone'])
    // A resend of the whole write (its first answer lost) counts nothing again.
    expect(await store.label([write(at, served!, 0, 'no'), write(at, served!, 1, 'yes')])).toEqual(['already', 'already'])
    const w = await store.window(model, 2, 100, 100)
    expect(w.bins.reduce((sum, b) => sum + b.rows, 0)).toBe(2)
    expect(w.bins.reduce((sum, b) => sum + b.positives, 0)).toBe(1)
  })

  it('starts a record served again under its key afresh: labels for the earlier serving are gone, the new one takes its own', async () => {
    const store = make()
    const model = unique('again')
    const at = key(unique('again'))
    await store.serve(at, { ...record([0.2]), model }, 60)
    const [earlier] = await store.records([at])
    expect(await store.label([write(at, earlier!, 0, 'no')])).toEqual(['counted'])
    await store.serve(at, { ...record([0.7], 1), model }, 60)
    const [later] = await store.records([at])
    expect(later!.servedId).not.toBe(earlier!.servedId)
    expect(await store.label([write(at, earlier!, 0, 'no')])).toEqual(['gone'])
    expect(await store.label([write(at, later!, 0, 'yes')])).toEqual(['counted'])
    expect((await store.window(model, 1, 100, 100)).bins.reduce((sum, b) => sum + b.rows, 0)).toBe(1)
    expect((await store.window(model, 2, 100, 100)).bins.reduce((sum, b) => sum + b.rows, 0)).toBe(1)
  })

  it('sums label counts per bin over the minutes of a window, with edge failures, and nothing outside it', async () => {
    const store = make()
    const model = unique('sum')
    const at = key(unique('sum'))
    await store.serve(at, { ...record([0.92, 0.91, 0.1, 0.1], 3), model }, 60)
    const [served] = await store.records([at])
    await store.label([
      write(at, served!, 0, 'yes', { minute: 100 }),
      write(at, served!, 1, 'no', { minute: 100, delaySeconds: 7_200 }),
      write(at, served!, 2, 'no', { minute: 101 }),
      write(at, served!, 3, 'yes', { minute: 103 }),
    ])
    await Promise.all([store.edgeFailure(model, 3, 101), store.edgeFailure(model, 3, 101), store.edgeFailure(model, 4, 101)])
    const w = await store.window(model, 3, 100, 102)
    const high = binIndex(PREDICTION_EDGES, 0.92)
    const low = binIndex(PREDICTION_EDGES, 0.1)
    expect(w.bins[high]).toEqual({ rows: 2, positives: 1 })
    expect(w.bins[low]).toEqual({ rows: 1, positives: 0 })
    expect(w.bins.reduce((s, b) => s + b.rows, 0)).toBe(3)
    expect(w.scoreSums[high]).toBeCloseTo(1.83, 9)
    expect(w.logLossSum).toBeCloseTo(rowLogLoss(0.92, true) + rowLogLoss(0.91, false) + rowLogLoss(0.1, false), 9)
    // Buckets end at 60 s, 600 s, 1 h, 6 h, ...: 30 s in the first, 2 h in the fourth.
    expect(w.delays).toEqual([2, 0, 0, 1, 0, 0, 0, 0])
    expect(w.edgeFailures).toBe(2)
  })

  it('puts a label 60 s after serving in the first delay bucket and one 61 s after in the second', async () => {
    const store = make()
    const model = unique('delay')
    const at = key(unique('delay'))
    await store.serve(at, { ...record([0.5, 0.5, 0.5, 0.5]), model }, 60)
    const [served] = await store.records([at])
    await store.label([0, 60, 61, 600].map((delaySeconds, i) => write(at, served!, i, 'yes', { delaySeconds })))
    expect((await store.window(model, 2, 100, 100)).delays).toEqual([2, 2, 0, 0, 0, 0, 0, 0])
  })
})

describe('the Redis store', () => {
  it('writes the edge failures of one flush interval in one round trip, each caller waiting for it', async () => {
    const redis = new Redis({ url: upstash.adapter.url, token: TOKEN, retry: false, enableTelemetry: false, automaticDeserialization: false })
    let writes = 0
    const counting = new Proxy(redis, { get: (target, name, receiver) => (name === 'eval' ? (...args: Parameters<Redis['eval']>) => (writes++, target.eval(...args)) : Reflect.get(target, name, receiver)) })
    const store = new UpstashGroundTruth(counting, { timeoutMs: 2_000, failureFlushMs: 20 })
    const model = `batch-${Math.random().toString(36).slice(2)}`
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.edgeFailure(model, 1 + (i % 2), 7)))
    expect(writes).toBe(1)
    expect((await store.window(model, 1, 7, 7)).edgeFailures).toBe(25)
    expect((await store.window(model, 2, 7, 7)).edgeFailures).toBe(25)
  })
})

describe('the in-memory store', () => {
  it('forgets a record past its TTL, and the oldest past its size bound', async () => {
    let now = 0
    const store = new MemoryGroundTruth({ maxRecords: 2, now: () => now })
    await store.serve(key('aaaaaaaa'), record([0.5]), 10)
    await store.serve(key('bbbbbbbb'), record([0.5]), 100)
    await store.serve(key('cccccccc'), record([0.5]), 100)
    expect((await store.records([key('aaaaaaaa'), key('bbbbbbbb'), key('cccccccc')])).map(Boolean)).toEqual([false, true, true])
    const [kept] = await store.records([key('cccccccc')])
    now = 100_001
    expect((await store.records([key('bbbbbbbb')])).map(Boolean)).toEqual([false])
    expect(await store.label([write(key('cccccccc'), kept!, 0, 'yes')])).toEqual(['gone'])
  })
})
