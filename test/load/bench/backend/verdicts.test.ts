import { describe, expect, it } from 'vitest'
import type { LoadResult } from '../../../../load/harness/autocannon.ts'
import { meanBatchSize, parseBatchCounters } from '../../../../load/harness/metrics.ts'
import { median, percentile } from '../../../../load/harness/percentile.ts'
import { rowsPerSec, summarize, verdictsFor, type Figures, type VerdictInputs } from '../../../../load/bench/backend/results.ts'

const load = (reqPerSec: number, ok = 1000, completed = 1000): LoadResult => ({ reqPerSec, ok, completed, p50Ms: 1, p99Ms: 2, non2xx: completed - ok, errors: 0, timeouts: 0 })

const figures = (reqPerSec: number, cpuUsPerRequest: number, p50Ms = 1): Figures => ({ reqPerSec, rowsPerSec: reqPerSec, p50Ms, p99Ms: 2 * p50Ms, cpuUsPerRequest, meanBatch: 1 })

/** A run where every target is met with some room, unless a test overrides a row. */
const inputs = (overrides: { tiny?: Partial<VerdictInputs['tiny']>; computeBound?: Partial<VerdictInputs['computeBound']>; lowLoad?: Partial<VerdictInputs['lowLoad']>; highLoad?: VerdictInputs['highLoad'] } = {}): VerdictInputs => ({
  tiny: {
    peerBatcher: figures(20_000, 40),
    peerPerRequest: figures(14_000, 60),
    backendOn: figures(19_800, 43),
    backendOff: figures(9_000, 88),
    backendDriftOff: figures(20_000, 42),
    ...overrides.tiny,
  },
  computeBound: { backend: figures(9_500, 100), peerBatcher: figures(10_000, 90), ...overrides.computeBound },
  lowLoad: { connections: 8, backend: figures(5_000, 80, 0.5), peerPerRequest: figures(9_000, 50, 0.45), ...overrides.lowLoad },
  highLoad: overrides.highLoad ?? [
    { connections: 64, idle: figures(15_000, 50), delay: figures(15_500, 50) },
    { connections: 256, idle: figures(14_000, 50), delay: figures(13_000, 50) },
  ],
})

const judged = (i: VerdictInputs) => verdictsFor(i).map((v) => [v.name, v.measured, v.pass] as const)

describe('the benchmark verdicts', () => {
  it('judge each target on the run\'s medians, in the direction the target says', () => {
    expect(judged(inputs())).toEqual([
      ['tiny, batching on: CPU/req backend ÷ peer batcher', 43 / 40, true],
      ['tiny, batching on: req/s backend ÷ peer batcher', 0.99, true],
      ['tiny, batching off: CPU/req backend ÷ per-request peer', 88 / 60, true],
      ['compute-bound, batched: rows/s backend ÷ peer batcher', 0.95, true],
      ['drift monitoring on ÷ off: req/s', 0.99, true],
      ['drift monitoring on ÷ off: CPU/req', 43 / 42, true],
      ['low load (8 conn): p50 backend ÷ per-request peer', 0.5 / 0.45, true],
      ['high load (64 conn): req/s idle ÷ delay dispatch', 15_000 / 15_500, true],
      ['high load (256 conn): req/s idle ÷ delay dispatch', 14_000 / 13_000, true],
    ])
    expect(verdictsFor(inputs())[0]).toMatchObject({ detail: '43 ÷ 40 µs', comparator: '≤', target: 1.1 })
  })

  it('miss a bound that is crossed either way: above a ≤ bound, below a ≥ bound', () => {
    const missed = verdictsFor(inputs({
      tiny: { backendOn: figures(18_900, 45), backendOff: figures(9_000, 91) },
      computeBound: { backend: figures(8_900, 100) },
      lowLoad: { backend: figures(5_000, 80, 0.55) },
      highLoad: [{ connections: 64, idle: figures(14_000, 50), delay: figures(15_000, 50) }],
    }))
    expect(missed.map((v) => [v.name, v.pass])).toEqual([
      ['tiny, batching on: CPU/req backend ÷ peer batcher', false],
      ['tiny, batching on: req/s backend ÷ peer batcher', false],
      ['tiny, batching off: CPU/req backend ÷ per-request peer', false],
      ['compute-bound, batched: rows/s backend ÷ peer batcher', false],
      ['drift monitoring on ÷ off: req/s', false],
      ['drift monitoring on ÷ off: CPU/req', false],
      ['low load (8 conn): p50 backend ÷ per-request peer', false],
      ['high load (64 conn): req/s idle ÷ delay dispatch', false],
    ])
  })

  it('pass a ratio exactly on its bound', () => {
    const onBound = verdictsFor(inputs({ tiny: { backendOn: figures(19_400, 44), backendDriftOff: figures(20_000, 44) } }))
    expect(onBound[0]).toMatchObject({ measured: 1.1, pass: true })
    expect(onBound[4]).toMatchObject({ measured: 0.97, pass: true })
  })

  it('fail a target whose rows were not measured rather than pass it', () => {
    const missing = verdictsFor(inputs({ tiny: { peerBatcher: undefined }, highLoad: [{ connections: 64, idle: figures(1, 1) }] }))
    expect(missing[0]).toMatchObject({ detail: 'not measured', pass: false })
    expect(missing.at(-1)).toMatchObject({ detail: 'not measured', pass: false })
    expect(Number.isNaN(missing[0].measured)).toBe(true)
  })

  it('show each verdict\'s sides against their duplicates from the same run as its noise floor', () => {
    const twins = inputs({ tiny: { backendOn: figures(19_000, 41), peerBatcher: figures(21_000, 44) } })
    const [cpu, req] = verdictsFor(inputs(), twins)
    expect(cpu.noise).toEqual({ a: 43 / 41, b: 40 / 44 })
    expect(req.noise).toEqual({ a: 19_800 / 19_000, b: 20_000 / 21_000 })
    // The verdict itself is judged on the main rows only.
    expect(cpu).toMatchObject({ measured: 43 / 40, pass: true })
    const alone = verdictsFor(inputs())[0].noise
    expect([alone.a, alone.b].every(Number.isNaN)).toBe(true)
    const missingTwin = verdictsFor(inputs(), inputs({ tiny: { peerBatcher: undefined } }))[0].noise
    expect(missingTwin.a).toBe(1)
    expect(missingTwin.b).toBeNaN()
  })

  it('reduce a row\'s runs to medians, ignoring figures a run could not measure, and count only answered rows', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([Number.NaN, 5])).toBe(5)
    expect(median([])).toBeNaN()
    expect(rowsPerSec(load(1_000, 900, 1_000), 4)).toBe(3_600)
    expect(rowsPerSec(load(1_000, 0, 0), 4)).toBe(0)
    const sample = (reqPerSec: number, cpuUsPerRequest: number, meanBatch = Number.NaN) => ({ load: load(reqPerSec), cpuUsPerRequest, meanBatch })
    expect(summarize([sample(10, 30), sample(30, 50), sample(20, 40)], 2)).toEqual({ reqPerSec: 20, rowsPerSec: 40, p50Ms: 1, p99Ms: 2, cpuUsPerRequest: 40, meanBatch: Number.NaN })
  })

  it('take percentiles as the smallest sample with at least p% at or below it', () => {
    const sorted = Float64Array.from({ length: 100 }, (_, i) => i + 1)
    expect([0, 1, 50, 99, 100].map((p) => percentile(sorted, p))).toEqual([1, 1, 50, 99, 100])
    expect(percentile([7], 50)).toBe(7)
    expect(percentile([1, 2, 3, 4], 50)).toBe(2)
  })

  it('read the mean batch from two scrapes of the batch-size histogram, summed over versions', () => {
    const scrape = (rows1: number, n1: number, rows2: number, n2: number) => [
      `edge_infer_backend_batch_size_rows_sum{model="m",version="1"} ${rows1}`,
      `edge_infer_backend_batch_size_rows_count{model="m",version="1"} ${n1}`,
      `edge_infer_backend_batch_size_rows_sum{model="m",version="2"} ${rows2}`,
      `edge_infer_backend_batch_size_rows_count{model="m",version="2"} ${n2}`,
      `edge_infer_backend_batch_size_rows_sum{model="other",version="1"} 999`,
    ].join('\n')
    const before = parseBatchCounters(scrape(10, 5, 0, 0), 'm')
    const after = parseBatchCounters(scrape(110, 10, 100, 5), 'm')
    expect(before).toEqual({ rows: 10, batches: 5 })
    expect(meanBatchSize(before, after)).toBe(200 / 10)
    expect(meanBatchSize(after, after)).toBeNaN()
  })
})
