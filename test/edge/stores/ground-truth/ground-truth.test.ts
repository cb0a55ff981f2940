import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redis } from '@upstash/redis'
import { binIndex } from '../../../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, rowLogLoss } from '../../../../shared/quality.ts'
import { type GroundTruthStore, type LabelCount, type LabelWrite, type Served, type ServedKey, type ServedRecord, windowReads } from '../../../../edge/stores/ground-truth/ground-truth-store.ts'
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

/** An hour-aligned minute three hours ago: every minute and hour the tests write is still kept. */
const HOUR0 = (Math.floor(Date.now() / 3_600_000) - 3) * 60
const M = HOUR0 + 10

const record = (scores: number[], version = 2): ServedRecord => ({ model: 'm', version, variant: 'stable', at: 0, labels: ['no', 'yes'], scores })
const key = (requestId: string, tenant = 'shop'): ServedKey => ({ tenant, requestId })
const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2)}`

/** A label write for instance `index` of the record read under `at`. */
const write = (at: ServedKey, served: Served, index: number, label: string, count: Partial<LabelCount> = {}): LabelWrite => ({
  key: at, servedId: served.servedId, index, label,
  count: { model: served.model, version: served.version, minute: M, score: served.scores[index], positive: label === 'yes', delaySeconds: 30, ...count },
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
    const w = await store.window(model, 2, M, M)
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
    expect((await store.window(model, 1, M, M)).bins.reduce((sum, b) => sum + b.rows, 0)).toBe(1)
    expect((await store.window(model, 2, M, M)).bins.reduce((sum, b) => sum + b.rows, 0)).toBe(1)
  })

  it('sums label counts per bin over the minutes of a window, with edge failures, and nothing outside it', async () => {
    const store = make()
    const model = unique('sum')
    const at = key(unique('sum'))
    await store.serve(at, { ...record([0.92, 0.91, 0.1, 0.1], 3), model }, 60)
    const [served] = await store.records([at])
    await store.label([
      write(at, served!, 0, 'yes', { minute: M }),
      write(at, served!, 1, 'no', { minute: M, delaySeconds: 7_200 }),
      write(at, served!, 2, 'no', { minute: M + 1 }),
      write(at, served!, 3, 'yes', { minute: M + 3 }),
    ])
    await Promise.all([store.edgeFailure(model, 3, M + 1), store.edgeFailure(model, 3, M + 1), store.edgeFailure(model, 4, M + 1)])
    const w = await store.window(model, 3, M, M + 2)
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
    expect((await store.window(model, 2, M, M)).delays).toEqual([2, 2, 0, 0, 0, 0, 0, 0])
  })

  it('keeps hourly rollups beside the minutes, each label and edge failure in both once, a resend in neither', async () => {
    const store = make()
    const model = unique('hourly')
    const at = key(unique('hourly'))
    await store.serve(at, { ...record([0.9, 0.9, 0.2, 0.2, 0.6]), model }, 60)
    const [served] = await store.records([at])
    const minutes = [HOUR0, HOUR0 + 59, HOUR0 + 60, HOUR0 + 61, HOUR0 + 150]
    const writes = minutes.map((minute, i) => write(at, served!, i, i % 2 ? 'yes' : 'no', { minute }))
    expect(await store.label(writes)).toEqual(['counted', 'counted', 'counted', 'counted', 'counted'])
    expect(await store.label(writes)).toEqual(['already', 'already', 'already', 'already', 'already'])
    await store.edgeFailure(model, 2, HOUR0 + 30)
    const rows = async (from: number, to: number) => (await store.window(model, 2, from, to)).bins.reduce((sum, b) => sum + b.rows, 0)
    // HOUR0's whole hour is read from its rollup; HOUR0+60..61 are minutes at the window's edge.
    expect(await rows(HOUR0, HOUR0 + 61)).toBe(4)
    expect(await rows(HOUR0, HOUR0 + 59)).toBe(2)
    expect(await rows(HOUR0 + 1, HOUR0 + 60)).toBe(2)
    expect(await rows(HOUR0 - 60, HOUR0 + 179)).toBe(5)
    expect((await store.window(model, 2, HOUR0 - 60, HOUR0 + 179)).edgeFailures).toBe(1)
  })
})

describe.each(stores)('counts by serving time in the store %s', (_, make) => {
  it('counts a label for a minute whose counts have expired in its hour only, and one past the hours nowhere, each marked once', async () => {
    const store = make()
    const model = unique('late')
    const at = key(unique('late'))
    await store.serve(at, { ...record([0.9, 0.9]), model }, 60)
    const [served] = await store.records([at])
    // Two days ago: past the minutes' day, within the hours' week. Eight days ago: past both.
    const twoDays = HOUR0 - 2 * 24 * 60 + 5
    const eightDays = HOUR0 - 8 * 24 * 60 + 5
    expect(await store.label([write(at, served!, 0, 'yes', { minute: twoDays }), write(at, served!, 1, 'yes', { minute: eightDays })])).toEqual(['counted', 'counted'])
    expect(await store.label([write(at, served!, 1, 'yes', { minute: eightDays })])).toEqual(['already'])
    const rows = async (from: number, to: number) => (await store.window(model, 2, from, to)).bins.reduce((sum, b) => sum + b.rows, 0)
    expect(await rows(twoDays, twoDays)).toBe(0)
    // Longer than a day: read in whole hours, so the label's hour is in it.
    expect(await rows(twoDays, twoDays + 24 * 60)).toBe(1)
    expect(await rows(HOUR0 - 9 * 24 * 60, HOUR0)).toBe(1)
  })
})

describe('the Redis store', () => {
  it('writes the edge failures of one flush interval in one round trip, each caller waiting for it', async () => {
    const redis = new Redis({ url: upstash.adapter.url, token: TOKEN, retry: false, enableTelemetry: false, automaticDeserialization: false })
    let writes = 0
    const counting = new Proxy(redis, { get: (target, name, receiver) => (name === 'eval' ? (...args: Parameters<Redis['eval']>) => (writes++, target.eval(...args)) : Reflect.get(target, name, receiver)) })
    const store = new UpstashGroundTruth(counting, { timeoutMs: 2_000, failureFlushMs: 20 })
    const model = `batch-${Math.random().toString(36).slice(2)}`
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.edgeFailure(model, 1 + (i % 2), M)))
    expect(writes).toBe(1)
    expect((await store.window(model, 1, M, M)).edgeFailures).toBe(25)
    expect((await store.window(model, 2, M, M)).edgeFailures).toBe(25)
  })
})

describe('the reads of a window', () => {
  it('takes whole hours from their rollups and the minutes at either end, a day at most ~140 reads and a week its 168 hours', () => {
    const h = 1_000 * 60
    expect(windowReads(h + 58, h + 121)).toEqual([{ unit: 'm', at: h + 58 }, { unit: 'm', at: h + 59 }, { unit: 'h', at: 1_001 }, { unit: 'm', at: h + 120 }, { unit: 'm', at: h + 121 }])
    expect(windowReads(h + 5, h + 20)).toHaveLength(16)
    const day = windowReads(h + 30, h + 30 + 24 * 60 - 1)
    expect(day.filter((r) => r.unit === 'h')).toHaveLength(23)
    expect(day).toHaveLength(23 + 60)
    // Longer than the minutes are kept: widened to whole hours.
    const week = windowReads(h + 1, h + 7 * 24 * 60)
    expect(week.every((r) => r.unit === 'h')).toBe(true)
    expect(week).toHaveLength(7 * 24 + 1)
    expect(windowReads(h, h + 7 * 24 * 60 - 1)).toHaveLength(7 * 24)
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
