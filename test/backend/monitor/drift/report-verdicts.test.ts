import { describe, expect, it } from 'vitest'
import type { DriftCounts } from '../../../../backend/monitor/drift/counts.ts'
import { driftReport, verdictOf } from '../../../../backend/monitor/drift/report.ts'
import type { ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { psiLevels, shutEffectLevels, sumsOf } from './psi-levels.ts'

/**
 * Six numeric features alike, each over 3 bins of 300/400/300 reference rows; PSI levels 0.1 / 0.2.
 * The effect gates are shut (the moved bins would open the shape gate): these verdicts are PSI's.
 */
const NAMES = ['f1', 'f2', 'f3', 'f4', 'f5', 'f6']
const levels = psiLevels(0.1, 0.2)
const six: ReportBaseline = {
  format: 3,
  model: 'm',
  version: 1,
  rows: 1000,
  features: NAMES.map((name) => ({ name, kind: 'numeric' as const, edges: [1, 2], counts: [300, 400, 300], min: 0, max: 3, missing: 0, missing_rate: 0, thresholds: levels, effect_size: { mean: 1.5, sd: 0.8, thresholds: shutEffectLevels } })),
  prediction: {
    edges: [0.5],
    counts: [700, 300],
    class_counts: { no: 700, yes: 300 },
    thresholds: levels,
    effect_size: { mean: -1, sd: 2, thresholds: shutEffectLevels },
    calibration: { positives: [140, 240], mean_probability: [0.2, 0.8] },
  },
}

/** Live bins [missing, below, b0, b1, b2, above] per feature: as the reference, moderately moved, or far. */
const AS_REFERENCE = [0, 0, 300, 400, 300, 0]
const MODERATE = [0, 0, 150, 400, 450, 0]
const FAR = [0, 0, 50, 250, 700, 0]

const window = (bins: number[][]): DriftCounts => ({
  model: 'm',
  version: 1,
  from_minute: 100,
  to_minute: 114,
  rows: 1000,
  // The sums say what the reference says: these verdicts are PSI's alone.
  features: bins.map((counts, i) => ({ name: NAMES[i]!, kind: 'numeric' as const, counts, sums: sumsOf(1000, 1.5, 0.8, 0, 3) })),
  prediction: { counts: [700, 300], class_counts: [700, 300], nan_outputs: 0, logit_sums: sumsOf(1000, -1, 2, -10, 10) },
  health: { requests: 10, errors: 0, rows: 1000, latency_bounds_us: [1000], latency_counts: [10, 0] },
})

const report = (bins: number[][]) => driftReport(six, new Set(), [window(bins)])

describe('drift verdicts', () => {
  it('puts a statistic on each threshold into the band it opens, below 1,000 rows never ok', () => {
    const at = { warning: 0.1, critical: 0.2 }
    expect([0.0999, 0.1, 0.15, 0.1999, 0.2, 0.5].map((psi) => verdictOf(1000, psi, at))).toEqual(['ok', 'warning', 'warning', 'warning', 'critical', 'critical'])
    expect(verdictOf(999, 0.5, at)).toBe('insufficient')
    expect(verdictOf(999, 0, at)).toBe('insufficient')
  })

  it('gives warning, for the feature and the dataset, to a PSI strictly between warning and critical', () => {
    const r = report([MODERATE, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE])
    const moved = r.features[0]!
    expect(moved.psi).toBeGreaterThan(0.1)
    expect(moved.psi).toBeLessThan(0.2)
    expect(moved.verdict).toBe('warning')
    expect(r.features.slice(1).map((f) => f.verdict)).toEqual(Array(5).fill('ok'))
    expect(r.dataset.verdict).toBe('warning')
  })

  it('makes the dataset critical at 2 of 6 critical features (≥ 30%), not at 1 of 6', () => {
    const one = report([FAR, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE])
    expect(one.features[0]!.verdict).toBe('critical')
    expect(one.dataset).toMatchObject({ verdict: 'warning', critical_features: ['f1'] })
    const two = report([FAR, FAR, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE, AS_REFERENCE])
    expect(two.dataset).toMatchObject({ verdict: 'critical', critical_features: ['f1', 'f2'] })
  })
})
