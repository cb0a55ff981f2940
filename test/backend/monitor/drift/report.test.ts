import { describe, expect, it } from 'vitest'
import type { DriftCounts } from '../../../../backend/monitor/drift/counts.ts'
import { driftReport, livePsiVector, type DriftReport } from '../../../../backend/monitor/drift/report.ts'
import type { ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { BackendMonitor } from '../../../../edge/rollout/backend-monitor.ts'
import { controllerDriftReport } from '../../../../shared/drift/report.ts'
import { psi } from '../../../../shared/drift/statistics.ts'
import { effectLevels, psiLevels, shutEffectLevels, sumsOf } from './psi-levels.ts'

const thresholds = psiLevels
/** x's reference moments over [0, 3], and the prediction logit's. */
const X = { mean: 1.5, sd: 0.8 }
const LOGIT = { mean: -1, sd: 2 }

/** Two features: numeric `x` over 3 bins, categorical `c` with a, b; reference 1,000 rows each. */
const baseline: ReportBaseline = {
  format: 3,
  model: 'm',
  version: 1,
  rows: 1000,
  features: [
    { name: 'x', kind: 'numeric', edges: [1, 2], counts: [300, 400, 300], min: 0, max: 3, missing: 0, missing_rate: 0, thresholds: thresholds(0.1, 0.2), effect_size: { ...X, thresholds: effectLevels } },
    { name: 'c', kind: 'categorical', categories: ['a', 'b'], counts: { a: 600, b: 380, __other__: 20, __unseen__: 0 }, missing: 0, missing_rate: 0, thresholds: thresholds(0.1, 0.25) },
  ],
  prediction: {
    edges: [0.5],
    counts: [700, 300],
    class_counts: { no: 700, yes: 300 },
    thresholds: thresholds(0.1, 0.2),
    effect_size: { ...LOGIT, thresholds: effectLevels },
    calibration: { positives: [140, 240], mean_probability: [0.2, 0.8] },
  },
}

const x0 = baseline.features[0] as Extract<ReportBaseline['features'][number], { kind: 'numeric' }>

interface Window {
  x: number[] // [missing, below, b0, b1, b2, above]
  c: number[] // [missing, a, b, other, unseen]
  p?: number[]
  /** Mean of x's present values and of the logit; the reference's unless given. */
  xMean?: number
  logitMean?: number
  requests?: number
  errors?: number
}

const counts = ({ x, c, p = [700, 300], xMean = X.mean, logitMean = LOGIT.mean, requests = 10, errors = 0 }: Window, minute = 100): DriftCounts => ({
  model: 'm',
  version: 1,
  from_minute: minute,
  to_minute: minute + 14,
  rows: x.reduce((a, b) => a + b, 0),
  features: [
    { name: 'x', kind: 'numeric', counts: x, sums: sumsOf(x.reduce((a, b) => a + b, 0) - x[0], xMean, X.sd, 0, 3) },
    { name: 'c', kind: 'categorical', counts: c },
  ],
  prediction: { counts: p, class_counts: [p[0], p[1]], nan_outputs: 0, logit_sums: sumsOf(p[0] + p[1], logitMean, LOGIT.sd, -10, 10) },
  health: { requests, errors, rows: 1000, latency_bounds_us: [1000, 2000, 4000], latency_counts: [50, 40, 10, 0] },
})

const steady: Window = { x: [0, 0, 300, 400, 300, 0], c: [0, 600, 380, 20, 0] }
const shifted: Window = { x: [0, 0, 100, 300, 500, 100], c: [0, 600, 380, 20, 0] }

describe('driftReport', () => {
  it('folds out-of-range counts into the edge bins for PSI and reports them as a rate', () => {
    expect(livePsiVector({ name: 'x', kind: 'numeric', counts: [5, 1, 2, 3, 4, 6] })).toEqual([5, 3, 3, 10])
    expect(livePsiVector({ name: 'b', kind: 'boolean', counts: [1, 2, 3] })).toEqual([1, 2, 3, 0, 0])
    const report = driftReport(baseline, new Set(), [counts(shifted)])
    const x = report.features[0]
    expect(x.psi).toBeCloseTo(psi([0, 300, 400, 300], [0, 100, 300, 600]), 12)
    expect(x.out_of_range_rate).toBeCloseTo(100 / 1000, 12)
    expect(x.verdict).toBe('critical')
    expect(report.features[1].verdict).toBe('ok')
  })

  it('says insufficient, never ok, below 1,000 rows', () => {
    const small = counts({ x: [0, 0, 3, 4, 3, 0], c: [0, 6, 4, 0, 0], p: [7, 3] })
    const report = driftReport(baseline, new Set(), [small])
    expect(report.features.map((f) => f.verdict)).toEqual(['insufficient', 'insufficient'])
    expect(report.dataset.verdict).toBe('insufficient')
    expect(report.prediction.verdict).toBe('insufficient')
  })

  it('alerts after 3 critical windows in a row and counts them', () => {
    const two = driftReport(baseline, new Set(), [counts(steady, 70), counts(shifted, 85), counts(shifted, 100)])
    expect(two.features[0]).toMatchObject({ verdict: 'critical', consecutive_critical: 2, alerting: false })
    const three = driftReport(baseline, new Set(), [counts(shifted, 70), counts(shifted, 85), counts(shifted, 100)])
    expect(three.features[0]).toMatchObject({ consecutive_critical: 3, alerting: true })
    expect(three.features[1]).toMatchObject({ consecutive_critical: 0, alerting: false })
  })

  it('lists every window it evaluated, oldest first, each with its own PSI and verdict; the last is the current one', () => {
    const thin: Window = { x: [0, 0, 10, 30, 50, 10], c: [0, 60, 38, 2, 0], p: [10, 90] }
    const report = driftReport(baseline, new Set(), [counts(steady, 70), counts(thin, 85), counts({ ...shifted, p: [400, 600] }, 100)])
    const [x, c] = report.features
    expect(x.windows.map((w) => [w.from_minute, w.to_minute, w.rows, w.verdict])).toEqual([
      [70, 84, 1000, 'ok'],
      [85, 99, 100, 'insufficient'],
      [100, 114, 1000, 'critical'],
    ])
    expect(x.windows[0].psi).toBeCloseTo(0, 12)
    // The thin window moved far, yet 100 rows say nothing.
    expect(x.windows[1].psi).toBeGreaterThan(x.thresholds.critical)
    // W1 by hand: the cumulative share gaps at 0, 1, 2, 3 are 0, 0.2, 0.3, 0; trapezoids 0.1 + 0.25 + 0.15 = 0.5, over sd 0.8.
    expect(x.windows[2]).toEqual({ from_minute: 100, to_minute: 114, rows: x.rows, psi: x.psi, verdict: x.verdict, smd: 0, z: 0, wasserstein: expect.closeTo(0.625, 12) })
    expect(c.windows.map((w) => w.verdict)).toEqual(['ok', 'insufficient', 'ok'])

    // The prediction's history over the same windows, and the baseline's histogram beside the live one.
    const { prediction } = report
    expect(prediction.windows.map((w) => [w.from_minute, w.rows, w.verdict])).toEqual([[70, 1000, 'ok'], [85, 100, 'insufficient'], [100, 1000, 'critical']])
    expect(prediction.windows[0].psi).toBeCloseTo(0, 12)
    expect(prediction.windows[2]).toMatchObject({ psi: prediction.psi, verdict: prediction.verdict })
    expect(prediction.counts).toEqual([400, 600])
    expect(prediction.baseline_counts).toEqual([700, 300])
  })

  it('gives each window the verdict of its own PSI against the feature\'s thresholds', () => {
    // x's PSI levels are 0.1 / 0.2, c's 0.1 / 0.25: c's PSI of about 0.2 is a warning, where on x it would be critical.
    const moderate: Window = { x: [0, 0, 150, 400, 450, 0], c: [0, 380, 600, 20, 0] }
    // x's effect gates shut, so its verdicts are PSI's alone.
    const psiOnly: ReportBaseline = { ...baseline, features: [{ ...x0, effect_size: { ...x0.effect_size, thresholds: shutEffectLevels } }, baseline.features[1]] }
    const report = driftReport(psiOnly, new Set(), [counts(shifted, 55), counts(moderate, 70), counts(steady, 85)])
    const [x, c] = report.features
    const expected = x.windows.map((w) => (w.psi >= x.thresholds.critical ? 'critical' : w.psi >= x.thresholds.warning ? 'warning' : 'ok'))
    expect(x.windows.map((w) => w.verdict)).toEqual(expected)
    expect(x.windows.map((w) => w.verdict)).toEqual(['critical', 'warning', 'ok'])
    // c's PSI is past x's critical level yet inside its own warning band ...
    expect(c.windows[1].psi).toBeGreaterThan(x.thresholds.critical)
    expect(c.windows[1].psi).toBeGreaterThanOrEqual(c.thresholds.warning)
    expect(c.windows[1].psi).toBeLessThan(c.thresholds.critical)
    // ... and the category gate, not PSI, makes it critical: 22% of rows moved from a to b.
    expect(c.windows[1].tvd).toBeCloseTo(0.22, 12)
    expect(c.windows.map((w) => w.verdict)).toEqual(['ok', 'critical', 'ok'])
  })

  it('makes the dataset critical when 30% of features are, or any important one is', () => {
    // 1 of 2 features is 50% ≥ 30%.
    expect(driftReport(baseline, new Set(), [counts(shifted)]).dataset).toMatchObject({ verdict: 'critical', critical_features: ['x'] })
    // With a third feature-free view: an important feature alone suffices, an unimportant one alone does not at 1/4.
    const wide: ReportBaseline = { ...baseline, features: [...baseline.features, { ...baseline.features[1], name: 'd' }, { ...baseline.features[1], name: 'e' }] }
    const wideCounts = (w: Window): DriftCounts => {
      const base = counts(w)
      return { ...base, features: [...base.features, { ...base.features[1], name: 'd' }, { ...base.features[1], name: 'e' }] }
    }
    expect(driftReport(wide, new Set(), [wideCounts(shifted)]).dataset.verdict).toBe('warning')
    expect(driftReport(wide, new Set(['x']), [wideCounts(shifted)]).dataset.verdict).toBe('critical')
  })

  it('reports the missing-rate delta, the prediction verdict and the health numbers', () => {
    const missing = driftReport(baseline, new Set(), [counts({ x: [150, 0, 250, 350, 250, 0], c: [0, 600, 380, 20, 0], p: [400, 600], requests: 20, errors: 3 })])
    expect(missing.features[0].missing_rate).toEqual({ reference: 0, observed: 0.15, delta: 0.15 })
    expect(missing.features[0].verdict).toBe('critical')
    expect(missing.prediction.verdict).toBe('critical')
    expect(missing.health).toMatchObject({ requests: 20, errors: 3, error_rate: 0.15 })
    // 50 of 100 requests under 1 ms, so the median is the first bound; p95 lies in the third bucket.
    expect(missing.health.p50_ms).toBeCloseTo(1, 9)
    expect(missing.health.p95_ms).toBeCloseTo((2000 + 2000 * 0.5) / 1000, 9)
  })

  it("is read by the edge's controller as sent: the shared schema parses it and the monitor takes its numbers", async () => {
    const sent = driftReport(baseline, new Set(), [counts({ ...shifted, requests: 20, errors: 3 })])
    const idle = driftReport(baseline, new Set(), [{ ...counts(steady), health: { requests: 0, errors: 0, rows: 0, latency_bounds_us: [1000], latency_counts: [0, 0] } }])
    const wire = (report: DriftReport): unknown => JSON.parse(JSON.stringify(report))
    expect(controllerDriftReport.safeParse(wire(sent)).success).toBe(true)
    expect(controllerDriftReport.safeParse(wire(idle)).success).toBe(true)
    // The history crosses the wire as the backend computed it; a backend that sends none is still read.
    const parsed = controllerDriftReport.parse(wire(sent))
    expect(parsed.features?.map((f) => f.windows)).toEqual(sent.features.map((f) => f.windows))
    expect(parsed.prediction).toMatchObject({ windows: sent.prediction.windows, baseline_counts: [700, 300] })
    // The label-free estimate from the baseline's calibration: bin 0 is 20% positive, bin 1 80%.
    expect(parsed.prediction.estimated_quality).toEqual(sent.prediction.estimated_quality)
    expect(sent.prediction.estimated_quality).toMatchObject({ labels: 1000, accuracy: 0.8 })
    const { windows: _w, baseline_counts: _b, ...olderPrediction } = sent.prediction
    expect(controllerDriftReport.safeParse({ ...wire(sent) as object, features: undefined, prediction: olderPrediction }).success).toBe(true)
    expect(controllerDriftReport.safeParse(wire({ ...sent, prediction: { ...sent.prediction, windows: [{ ...sent.prediction.windows[0], verdict: 'fine' as 'ok' }] } })).success).toBe(false)

    const monitorOf = (report: DriftReport) => new BackendMonitor({ baseUrl: 'http://backend', fetch: async () => Response.json(report) })
    expect(await monitorOf(sent).arm('m', 1, 15)).toEqual({
      version: 1,
      rows: sent.rows,
      requests: 20,
      errors: 3,
      nan_outputs: 0,
      p95_ms: sent.health.p95_ms,
      prediction_counts: sent.prediction.counts,
      input_drift: 'critical',
    })
    expect(await monitorOf(idle).arm('m', 1, 15)).toMatchObject({ requests: 0, p95_ms: 0 })
  })
})
