import { describe, expect, it } from 'vitest'
import type { DriftCounts } from '../../../../backend/monitor/drift/counts.ts'
import { driftReport, wassersteinVerdictOf } from '../../../../backend/monitor/drift/report.ts'
import type { ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { binIndex } from '../../../../shared/drift/statistics.ts'
import { createRandom } from '../../../../tools/training/random.ts'
import { effectLevels, psiLevels, sumsOf } from './psi-levels.ts'

/**
 * The shape gate (Wasserstein-1 over the reference sd) on changes a mean does not show: one numeric
 * feature x, N(0, 1) in the reference (100,000 rows over 12 bins), and 1,000-row windows drawn
 * with fixed seeds: undrifted, scaled 1.25× about the mean, or split into two modes 1.8 sd apart
 * (each √0.19 wide, so the mean and sd stay put; W1 ≈ 0.21 sd). A split at ±0.8 sd moves W1 only
 * 0.1 sd for a normal, too little for 1,000 rows to tell.
 */

const EDGES = Array.from({ length: 11 }, (_, i) => -2.5 + i / 2)
const MIN = -6
const MAX = 6

const moments = (values: readonly number[]) => {
  const mean = values.reduce((a, b) => a + b, 0) / values.length
  return { mean, sd: Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length) }
}

const binCounts = (values: readonly number[]): number[] => {
  const counts = new Array<number>(EDGES.length + 1).fill(0)
  for (const v of values) counts[binIndex(EDGES, v)]++
  return counts
}

const referenceValues = (() => {
  const random = createRandom(7)
  return Array.from({ length: 100_000 }, () => random.normal(0, 1))
})()
const X = moments(referenceValues)

const baseline: ReportBaseline = {
  format: 3,
  model: 'm',
  version: 1,
  rows: referenceValues.length,
  features: [{
    name: 'x', kind: 'numeric', edges: EDGES, counts: binCounts(referenceValues), min: MIN, max: MAX, missing: 0, missing_rate: 0,
    thresholds: psiLevels(0.1, 0.2), effect_size: { ...X, thresholds: effectLevels },
  }],
  prediction: {
    edges: [0.5],
    counts: [700, 300],
    class_counts: { no: 700, yes: 300 },
    thresholds: psiLevels(0.1, 0.2),
    effect_size: { mean: -1, sd: 2, thresholds: effectLevels },
    calibration: { positives: [140, 240], mean_probability: [0.2, 0.8] },
  },
}

type Change = (z: number, draw: () => number) => number

const window = (values: readonly number[], minute: number): DriftCounts => {
  const m = moments(values)
  return {
    model: 'm',
    version: 1,
    from_minute: minute,
    to_minute: minute,
    rows: values.length,
    // [missing, below min, bins…, above max]: the draws stay inside ±6.
    features: [{ name: 'x', kind: 'numeric', counts: [0, 0, ...binCounts(values), 0], sums: sumsOf(values.length, m.mean, m.sd, MIN, MAX) }],
    prediction: { counts: [700, 300], class_counts: [700, 300], nan_outputs: 0, logit_sums: sumsOf(1000, -1, 2, -10, 10) },
    health: { requests: 1, errors: 0, rows: values.length, latency_bounds_us: [1000], latency_counts: [1, 0] },
  }
}

/** Three consecutive 1,000-row windows of N(0, 1) with `change` applied, from `seed`. */
const stream = (seed: number, change: Change) => {
  const random = createRandom(seed)
  const windows = [0, 1, 2].map((w) => window(Array.from({ length: 1000 }, () => change(random.normal(0, 1), () => random.next())), 100 + w))
  return driftReport(baseline, new Set(), windows).features[0]
}

const unchanged: Change = (z) => z
const scaled: Change = (z) => 1.25 * z
const split: Change = (z, draw) => (draw() < 0.5 ? -0.9 : 0.9) + Math.sqrt(1 - 0.9 ** 2) * z

describe('the Wasserstein-1 gate', () => {
  it('opens only past both the least effect and its no-drift level (by hand)', () => {
    const levels = { warning: 0.12, critical: 0.15 }
    expect(wassersteinVerdictOf(1000, 0.2, levels, 0.1)).toBe('critical')
    expect(wassersteinVerdictOf(1000, 0.15, levels, 0.1)).toBe('critical')
    expect(wassersteinVerdictOf(1000, 0.13, levels, 0.1)).toBe('warning')
    expect(wassersteinVerdictOf(1000, 0.11, levels, 0.1)).toBe('ok')
    // Past the levels yet below the least effect: a large window proving a trivial change.
    expect(wassersteinVerdictOf(1000, 0.2, levels, 0.25)).toBe('ok')
    expect(wassersteinVerdictOf(1000, null, null, 0.1)).toBe('ok')
    expect(wassersteinVerdictOf(999, 0.9, levels, 0.1)).toBe('insufficient')
  })

  it('stays shut on undrifted windows (seed 101)', () => {
    const x = stream(101, unchanged)
    expect(x.windows.map((w) => w.verdict)).toEqual(['ok', 'ok', 'ok'])
    expect(x.effect_size!.wasserstein_verdict).toBe('ok')
    expect(x.effect_size!.wasserstein!).toBeLessThan(x.effect_size!.wasserstein_thresholds!.warning)
    expect(x.alerting).toBe(false)
  })

  it('fires on a 1.25× scale change the mean does not show, and alerts on the third window (seed 102)', () => {
    const x = stream(102, scaled)
    const effect = x.effect_size!
    // W1 of N(0, 1.25²) against N(0, 1) is 0.25·E|Z| = 0.25·√(2/π) ≈ 0.2 sd; the bins blur it a little.
    expect(effect.wasserstein!).toBeGreaterThan(0.15)
    expect(effect.wasserstein!).toBeLessThan(0.25)
    expect(effect.smd_verdict).toBe('ok')
    expect(effect.wasserstein_verdict).toBe('critical')
    expect(x.windows.map((w) => w.verdict)).toEqual(['critical', 'critical', 'critical'])
    expect(x.alerting).toBe(true)
  })

  it('fires on a bimodal split with the same mean and sd (seed 103)', () => {
    const x = stream(103, split)
    const effect = x.effect_size!
    expect(effect.wasserstein!).toBeGreaterThan(0.15)
    expect(Math.abs(effect.smd!)).toBeLessThan(0.1)
    expect(effect.sd.observed!).toBeCloseTo(1, 1)
    expect(effect.smd_verdict).toBe('ok')
    expect(effect.wasserstein_verdict).toBe('critical')
    expect(x.windows.map((w) => w.verdict)).toEqual(['critical', 'critical', 'critical'])
    expect(x.alerting).toBe(true)
  })
})
