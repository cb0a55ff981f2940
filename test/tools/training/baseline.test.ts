import { describe, expect, it } from 'vitest'
import { computeBaseline, predictionReference, quantileEdges } from '../../../tools/training/baseline.ts'
import { psiReference } from '../../../backend/monitor/drift/baseline-format.ts'
import { chiSquareQuantile } from '../../../shared/drift/statistics.ts'
import { featureSpec, type FeatureValue } from '../../../shared/feature-spec.ts'

describe('quantileEdges', () => {
  it('gives 19 interior edges for distinct values', () => {
    const sorted = Array.from({ length: 100 }, (_, i) => i)
    expect(quantileEdges(sorted)).toEqual([5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95])
  })
  it('removes ties and an edge at the minimum', () => {
    // 60% zeros, then ones and twos: the only useful edges are 1 and 2.
    const sorted = [...new Array(60).fill(0), ...new Array(30).fill(1), ...new Array(10).fill(2)]
    expect(quantileEdges(sorted)).toEqual([1, 2])
  })
  it('gives no edges for a constant feature', () => {
    expect(quantileEdges([3, 3, 3, 3])).toEqual([])
  })
})

describe('computeBaseline', () => {
  const spec = featureSpec.parse({
    input: 'x',
    features: [
      { name: 'n', type: 'number', min: 0, max: 1000, required: false, default: 0 },
      { name: 'c', type: 'category', categories: ['a', 'b', 'rare'] },
      { name: 'flag', type: 'boolean' },
    ],
  })
  // 200 rows: c is mostly "b", 1 "rare" (0.5% → __other__), 1 unknown value (→ __unseen__); n missing twice.
  const row = (i: number): Record<string, FeatureValue> => {
    const c = i === 0 ? 'rare' : i === 1 ? 'zzz' : i % 4 === 0 ? 'a' : 'b'
    return i < 2 ? { c, flag: i % 2 === 0 } : { n: i, c, flag: i % 2 === 0 }
  }
  const instances = Array.from({ length: 200 }, (_, i) => row(i))
  const positive = Array.from({ length: 200 }, (_, i) => i / 200)
  // 40 windows of 1000 that repeat the counted rows exactly: PSI 0 in every one. Every fifth
  // held-out row is labels[1]: 400 of the 2000 held-out rows in each prediction bin.
  const heldOut = {
    instances: Array.from({ length: 40_000 }, (_, i) => row(i % 200)),
    positive: Array.from({ length: 40_000 }, (_, i) => (i % 200) / 200),
    outcomes: Array.from({ length: 40_000 }, (_, i) => (i % 5 === 0 ? 1 : 0)),
  }
  const baseline = computeBaseline({ model: 'm', version: 3, spec, instances, positive, labels: ['no', 'yes'], threshold: 0.5, heldOut })

  it('bins numbers at their quantiles and records range and missing rate', () => {
    const [n] = baseline.features
    expect(n).toMatchObject({ name: 'n', kind: 'numeric', min: 2, max: 199, missing: 2, missing_rate: 0.01 })
    if (n.kind !== 'numeric') throw new Error('expected numeric')
    expect(n.edges).toHaveLength(19)
    expect(n.counts.reduce((a, b) => a + b, 0)).toBe(198)
    expect(Math.max(...n.counts) - Math.min(...n.counts)).toBeLessThanOrEqual(1)
  })

  it('keeps categories covering 99% by descending count, folds the rest into __other__', () => {
    const { thresholds, ...c } = baseline.features[1]
    expect(c).toEqual({
      name: 'c',
      kind: 'categorical',
      categories: ['b', 'a'],
      counts: { b: 149, a: 49, __other__: 1, __unseen__: 1 },
      missing: 0,
      missing_rate: 0,
    })
    expect(Object.keys(baseline.features[1].counts)).toEqual(['b', 'a', '__other__', '__unseen__'])
  })

  it('treats booleans as the categories "false" and "true"', () => {
    const { thresholds, ...flag } = baseline.features[2]
    expect(flag).toEqual({
      name: 'flag',
      kind: 'categorical',
      categories: ['false', 'true'],
      counts: { false: 100, true: 100, __other__: 0, __unseen__: 0 },
      missing: 0,
      missing_rate: 0,
    })
  })

  it('histograms the positive-class probability in 20 fixed bins and counts predicted classes', () => {
    expect(baseline).toMatchObject({ format: 3, model: 'm', version: 3, rows: 200 })
    expect(baseline.prediction.edges).toEqual([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95])
    expect(baseline.prediction.counts).toEqual(new Array(20).fill(10))
    expect(baseline.prediction.class_counts).toEqual({ no: 100, yes: 100 })
  })

  it('lays reference counts out as the monitor counts: missing, then the bins', () => {
    const [n, c, flag] = baseline.features
    if (n.kind !== 'numeric') throw new Error('expected numeric')
    expect(psiReference(n)).toEqual([2, ...n.counts])
    expect(psiReference(n)).toHaveLength(n.edges.length + 2)
    expect(psiReference(c)).toEqual([0, 149, 49, 1, 1])
    expect(psiReference(flag)).toEqual([0, 100, 100, 0, 0])
    expect(predictionReference(baseline)).toEqual(baseline.prediction.counts)
    for (const f of baseline.features) expect(psiReference(f).reduce((a, b) => a + b, 0)).toBe(200)
  })

  it('calibrates levels for every feature and the prediction, raised where 200 reference rows are too few', () => {
    const references = [...baseline.features.map(psiReference), predictionReference(baseline)]
    const levels = [...baseline.features, baseline.prediction].map((f) => f.thresholds)
    levels.forEach((thresholds, i) => {
      const bins = references[i].filter((c) => c > 0).length
      const bound = (p: number) => (1 / 1000 + 1 / 200) * chiSquareQuantile(p, bins - 1)
      expect(thresholds).toMatchObject({ statistic: 'psi', window: 1000 })
      expect(thresholds.no_drift).toMatchObject({ reference_bins: bins, held_out_windows: 40, held_out_mean: 0, held_out_sd: 0 })
      expect(thresholds.warning).toBeCloseTo(Math.max(0.1, bound(0.99)), 12)
      expect(thresholds.critical).toBeCloseTo(Math.max(0.2, bound(0.999)), 12)
    })
    // n and the prediction have 20 bins: (1/1000 + 1/200)·χ²₀.₉₉(19) ≈ 0.217 is above the 0.1 floor.
    expect(levels.map((t) => t.warning > 0.1)).toEqual([true, false, false, true])
  })

  it('records the moments the effect size compares against: numbers clamped to [min, max], the logit of the score within ±10', () => {
    const [n] = baseline.features
    if (n.kind !== 'numeric') throw new Error('expected numeric')
    // n is 2…199: mean 100.5, population sd √((198² − 1) / 12); the grid (197 / 4096) moves neither by a step.
    expect(Math.abs(n.effect_size.mean - 100.5)).toBeLessThan(197 / 4096)
    expect(Math.abs(n.effect_size.sd - Math.sqrt((198 ** 2 - 1) / 12))).toBeLessThan(197 / 4096)
    const logits = positive.map((p) => Math.max(-10, Math.log(p / (1 - p))))
    const mean = logits.reduce((a, b) => a + b) / 200
    const sd = Math.sqrt(logits.reduce((a, l) => a + (l - mean) ** 2, 0) / 200)
    expect(Math.abs(baseline.prediction.effect_size.mean - mean)).toBeLessThan(20 / 4096)
    expect(Math.abs(baseline.prediction.effect_size.sd - sd)).toBeLessThan(20 / 4096)
    expect('effect_size' in baseline.features[1]).toBe(false)
  })

  it('calibrates the effect-size levels on the held-out windows: their floors when every window is the reference', () => {
    for (const { thresholds } of [baseline.features[0] as { effect_size: { thresholds: object } }, baseline.prediction].map((f) => f.effect_size)) {
      expect(thresholds).toEqual({
        statistic: 'smd', window: 1000, min_effect: 0.1, z_warning: 3, z_critical: 4,
        no_drift: { held_out_windows: 40, z_mean: 0, z_sd: 0, max_abs_smd: 0 },
      })
    }
  })

  it('calibrates the prediction bins on the held-out rows\' labels, not the counted rows: label-positive rows and mean score per bin', () => {
    // 10 counted rows per bin × the held-out share (400 of 2000).
    expect(baseline.prediction.calibration.positives).toEqual(new Array(20).fill(2))
    // Bin b holds scores (10b … 10b + 9) / 200.
    baseline.prediction.calibration.mean_probability.forEach((p, b) => expect(p).toBeCloseTo((10 * b + 4.5) / 200, 12))
    expect(() => computeBaseline({ model: 'm', version: 3, spec, instances, positive, labels: ['no', 'yes'], threshold: 0.5, heldOut: { ...heldOut, outcomes: heldOut.outcomes.slice(1) } }))
      .toThrow('39999 outcomes for 40000 scored instances')
  })

  it('refuses held-out rows too few for 40 windows', () => {
    const short = { instances: heldOut.instances.slice(0, 39_999), positive: heldOut.positive.slice(0, 39_999), outcomes: heldOut.outcomes.slice(0, 39_999) }
    expect(() => computeBaseline({ model: 'm', version: 3, spec, instances, positive, labels: ['no', 'yes'], threshold: 0.5, heldOut: short }))
      .toThrow(/39 windows of 1000; calibration needs 40/)
  })
})
