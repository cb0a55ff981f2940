import { describe, expect, it } from 'vitest'
import { shadowExposition } from '../../../../edge/exposition/shadow.ts'
import { RequestMetrics, SHADOW_DIFF_BUCKETS, type SharedTally, type Tally } from '../../../../edge/stores/tallies/tally.ts'
import { bucketQuantile, shadowCalls, shadowPairs } from '../../../../edge/stores/tallies/shadow.ts'
import { samplesOf, total } from '../../pipeline/request-metrics/samples.ts'
import { promtoolCheckMetrics } from '../../pipeline/request-metrics/promtool.ts'

/** Redis's part (each write id applied once), in memory. */
class SummingTally implements SharedTally {
  readonly sums: Tally = new Map()
  readonly applied = new Set<string>()
  async add(writeId: string, deltas: Tally): Promise<void> {
    if (this.applied.has(writeId)) return
    this.applied.add(writeId)
    for (const [name, delta] of deltas) this.sums.set(name, (this.sums.get(name) ?? 0) + delta)
  }
  async read(): Promise<Tally> {
    return new Map(this.sums)
  }
}

const compared = (agreeing: number, diffs: number[], servedVersion = 1) => ({ model: 'credit-risk', servedVersion, shadowVersion: 2, agreeing, diffs })

describe('shadow comparison counts', () => {
  it('sum rows, agreement and |Δp| per (model, served version, shadow version) across isolates', async () => {
    const shared = new SummingTally()
    const a = new RequestMetrics({ shared })
    const b = new RequestMetrics({ shared })
    a.shadowCompared(compared(3, [0, 0.002, 0.04, 0.3]))
    b.shadowCompared(compared(1, [0.7, 0.0005]))
    b.shadowCompared(compared(2, [0.01, 0.01], 3))
    await Promise.all([a.flush(), b.flush()])
    const pairs = shadowPairs(await a.totals())
    expect(pairs.map((p) => [p.version, p.shadow_version, p.rows, p.agreeing])).toEqual([[1, 2, 6, 4], [3, 2, 2, 2]])
    const [first] = pairs
    expect(first.agreement).toBeCloseTo(4 / 6, 12)
    expect(first.abs_diff_sum).toBeCloseTo(1.0425, 9)
    expect(first.mean_abs_diff).toBeCloseTo(1.0425 / 6, 9)
    // 0 and 0.0005 ≤ 0.001; 0.002 ≤ 0.0025; 0.04 ≤ 0.05; 0.3 ≤ 0.5; 0.7 beyond every bound.
    expect(first.buckets.filter((b) => b.rows > 0)).toEqual([{ le: 0.001, rows: 2 }, { le: 0.0025, rows: 1 }, { le: 0.05, rows: 1 }, { le: 0.5, rows: 1 }, { le: '+Inf', rows: 1 }])
    expect(first.p99_abs_diff).toBe(SHADOW_DIFF_BUCKETS[SHADOW_DIFF_BUCKETS.length - 1])
  })

  it('interpolate the p99 within its bucket as histogram_quantile does', () => {
    // 100 rows: 98 at ≤ 0.001, 2 in (0.01, 0.025]: rank 99 is halfway through the second bucket.
    expect(bucketQuantile(0.99, [0.001, 0.01, 0.025], [98, 0, 2, 0])).toBeCloseTo(0.0175, 12)
    expect(bucketQuantile(0.99, [0.001], [0, 0])).toBeNull()
  })

  it('expose a counter pair and a cumulative histogram whose _sum/_count is the mean', async () => {
    const metrics = new RequestMetrics()
    metrics.shadowCompared(compared(1, [0.002, 0.2]))
    const samples = samplesOf(shadowExposition(await metrics.totals()))
    const pair = { model: 'credit-risk', version: '1', shadow_version: '2' }
    expect(total(samples, 'edge_infer_shadow_compared_rows_total', pair)).toBe(2)
    expect(total(samples, 'edge_infer_shadow_agreeing_rows_total', pair)).toBe(1)
    expect(total(samples, 'edge_infer_shadow_probability_diff_bucket', { ...pair, le: '0.001' })).toBe(0)
    expect(total(samples, 'edge_infer_shadow_probability_diff_bucket', { ...pair, le: '0.0025' })).toBe(1)
    expect(total(samples, 'edge_infer_shadow_probability_diff_bucket', { ...pair, le: '0.25' })).toBe(2)
    expect(total(samples, 'edge_infer_shadow_probability_diff_bucket', { ...pair, le: '+Inf' })).toBe(2)
    expect(total(samples, 'edge_infer_shadow_probability_diff_sum', pair)).toBeCloseTo(0.202, 9)
    expect(total(samples, 'edge_infer_shadow_probability_diff_count', pair)).toBe(2)
    expect(await promtoolCheckMetrics(shadowExposition(await metrics.totals()))).toEqual({ code: 0, findings: '' })
  })

  it('count shadow calls and their failures from the request counts', async () => {
    const metrics = new RequestMetrics()
    const call = (code: number, version = '2') => metrics.request({ model: 'credit-risk', version, variant: 'shadow', code, servedBy: code === 200 ? 'backend' : 'edge', seconds: 0.01 })
    call(200)
    call(200)
    call(504)
    call(500, '3')
    metrics.request({ model: 'credit-risk', version: '2', variant: 'stable', code: 500, servedBy: 'edge', seconds: 0.01 })
    expect(shadowCalls(await metrics.totals(), 'credit-risk', 2)).toEqual({ calls: 3, errors: 1 })
  })
})
