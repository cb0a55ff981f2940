import { describe, expect, it } from 'vitest'
import type { LoadResult } from '../../load/autocannon.ts'
import { meanBatchSize, parseBatchCounters } from '../../load/metrics.ts'
import { percentile } from '../../load/percentile.ts'
import { checksFor, rowsPerSec, type ModelResults } from '../../load/results.ts'

const load = (reqPerSec: number, ok = 1000, completed = 1000): LoadResult => ({ reqPerSec, ok, completed, p50Ms: 1, p99Ms: 2, non2xx: completed - ok, errors: 0, timeouts: 0 })
const served = (reqPerSec: number) => ({ load: load(reqPerSec), meanBatch: 1 })

/** One model's run: C(1) 10k rows/s, C(8) 40k, H 20k req/s, unbatched 5k, batched 16k, unmonitored 16.5k. */
const results = (overrides: Partial<ModelResults> = {}): ModelResults => ({
  model: 'm',
  node: 'v24.21.0',
  rowsPerRequest: 1,
  b: 8,
  ceilings: new Map([[1, 10_000], [8, 40_000]]),
  httpCeiling: load(20_000),
  unbatched: served(5_000),
  batched: served(16_000),
  unmonitored: served(16_500),
  checkAgainstHttp: true,
  ...overrides,
})

describe('the benchmark verdicts', () => {
  it('judge each target on the run\'s own numbers, with the binding limit named', () => {
    const checks = checksFor(results())
    expect(checks.map((c) => [c.name, c.measured, c.pass])).toEqual([
      ['batched ÷ min(C(b), H×rows)', 16_000 / 20_000, true],
      ['(batched ÷ unbatched) ÷ (C(b) ÷ C(1))', (16_000 / 5_000) / (40_000 / 10_000), true],
      ['batched ÷ H', 0.8, false],
      ['drift monitoring on ÷ off', 16_000 / 16_500, true],
    ])
    expect(checks[0]!.detail).toBe('16.0k ÷ 20.0k (binding: H)')
    expect(checksFor(results({ ceilings: new Map([[1, 10_000], [8, 15_000]]) }))[0]!.detail).toBe('16.0k ÷ 15.0k (binding: C(8))')
  })

  it('count only answered rows, and fail a target whose inputs are missing rather than pass it', () => {
    expect(rowsPerSec(load(1_000, 900, 1_000), 4)).toBe(3_600)
    expect(rowsPerSec(load(1_000, 0, 0), 4)).toBe(0)
    const noCeiling = checksFor(results({ ceilings: new Map([[8, 40_000]]), unmonitored: undefined, checkAgainstHttp: false }))
    expect(noCeiling.map((c) => c.name)).toEqual(['batched ÷ min(C(b), H×rows)', '(batched ÷ unbatched) ÷ (C(b) ÷ C(1))'])
    expect(noCeiling[1]!.pass).toBe(false)
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
