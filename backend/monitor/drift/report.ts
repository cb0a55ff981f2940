import type { ControllerDriftReport, DriftWindow, Verdict } from '../../../shared/drift/report.ts'
import { binnedKs, chiSquare, jensenShannonDistance, psi } from '../../../shared/drift/statistics.ts'
import { psiReference, type DriftThresholds } from './baseline-format.ts'
import type { DriftCounts, FeatureCounts } from './counts.ts'
import { latencyQuantile } from './latency.ts'
import type { ReportBaseline } from './report-baseline.ts'
import { type AlertState, alertRule } from './alert-rule.ts'

/** Below this many rows a window says nothing: its verdict is `insufficient`, never `ok`. */
export const MIN_WINDOW_ROWS = 1_000
/** Share of critical features that makes the whole input critical. */
export const DATASET_CRITICAL_SHARE = 0.3

export interface Rate {
  reference: number
  observed: number
  delta: number
}

/** Type aliases, not interfaces: the shared contract's loose feature object needs their implicit index signature. */
export type DistributionDrift = {
  rows: number
  psi: number
  js_distance: number
  thresholds: { warning: number; critical: number }
  verdict: Verdict
  /** Critical windows in a row, ending with this one. */
  consecutive_critical: number
  /** The alert rule's state: on after 3 critical windows in a row, off after 3 clean ones. */
  alerting: boolean
  /** Every window evaluated, oldest first, each with its own PSI and verdict; the last is the current one. */
  windows: DriftWindow[]
}

export type FeatureDrift = DistributionDrift & {
  name: string
  kind: FeatureCounts['kind']
  important: boolean
  /** Binned two-sample KS over the present values (numeric only); the p-value only confirms. */
  ks?: { d: number; p_value: number }
  chi_square: { statistic: number; df: number; p_value: number }
  missing_rate: Rate
  /** Present values outside the baseline's [min, max] (numeric only; the reference is 0). */
  out_of_range_rate?: number
}

/** Extends what the edge's controller reads, so the compiler holds the report to that contract. */
export interface DriftReport extends ControllerDriftReport {
  model: string
  version: number
  window: { minutes: number; from_minute: number; to_minute: number; evaluated_windows: number }
  rows: number
  dataset: { verdict: Verdict; critical_features: string[]; alerting: boolean; alerting_features: string[] }
  features: FeatureDrift[]
  /** `counts` are the current window's rows per prediction bin; `baseline_counts` the baseline's over the same bins. */
  prediction: DistributionDrift & { counts: number[]; baseline_counts: number[]; class_counts: [number, number]; nan_outputs: number }
  health: {
    requests: number
    errors: number
    error_rate: number
    rows: number
    p50_ms: number | null
    p95_ms: number | null
  }
}

/**
 * Live counts in the reference's PSI layout (see `psiReference`): numeric values below the
 * baseline's min or above its max join the first or last bin; a boolean has no `__other__` or
 * `__unseen__` cell live, so those are 0.
 */
export const livePsiVector = (live: FeatureCounts): number[] => {
  const c = live.counts
  if (live.kind === 'numeric') return [c[0], c[1] + c[2], ...c.slice(3, -2), c[c.length - 2] + c[c.length - 1]]
  if (live.kind === 'boolean') return [...c, 0, 0]
  return [...c]
}

const sum = (counts: readonly number[]): number => counts.reduce((a, b) => a + b, 0)

export const verdictOf = (rows: number, statistic: number, { warning, critical }: Pick<DriftThresholds, 'warning' | 'critical'>): Verdict =>
  rows < MIN_WINDOW_ROWS ? 'insufficient' : statistic >= critical ? 'critical' : statistic >= warning ? 'warning' : 'ok'

/** A window's span, the minutes its counts cover. */
type Span = Pick<DriftCounts, 'from_minute' | 'to_minute'>

/** PSI and its verdict for each window (oldest first), with the alert rule run over them. */
const distribution = (reference: readonly number[], windows: readonly (readonly number[])[], spans: readonly Span[], thresholds: Pick<DriftThresholds, 'warning' | 'critical'>): DistributionDrift => {
  let state: AlertState = alertRule.initial
  const history = windows.map((observed, i): DriftWindow => {
    const rows = sum(observed)
    const value = psi(reference, observed)
    const verdict = verdictOf(rows, value, thresholds)
    state = alertRule.next(state, verdict)
    return { from_minute: spans[i].from_minute, to_minute: spans[i].to_minute, rows, psi: value, verdict }
  })
  const last = history[history.length - 1]
  if (!last) throw new RangeError('a drift report needs at least one window')
  const current = windows[windows.length - 1]
  return {
    rows: last.rows,
    psi: last.psi,
    js_distance: jensenShannonDistance(reference, current),
    thresholds: { warning: thresholds.warning, critical: thresholds.critical },
    verdict: last.verdict,
    consecutive_critical: state.critical,
    alerting: state.alerting,
    windows: history,
  }
}

const featureDrift = (baseline: ReportBaseline['features'][number], important: boolean, windows: readonly FeatureCounts[], spans: readonly Span[]): FeatureDrift => {
  const reference = psiReference(baseline)
  const vectors = windows.map(livePsiVector)
  const current = windows[windows.length - 1]
  const observed = vectors[vectors.length - 1]
  const rows = sum(observed)
  const referenceRows = sum(reference)
  const missing = { reference: reference[0] / referenceRows, observed: rows === 0 ? 0 : observed[0] / rows }
  const present = rows - observed[0]
  const { statistic, df, pValue } = chiSquare(reference, observed)
  const drift: FeatureDrift = {
    name: baseline.name,
    kind: current.kind,
    important,
    ...distribution(reference, vectors, spans, baseline.thresholds),
    chi_square: { statistic, df, p_value: pValue },
    missing_rate: { ...missing, delta: missing.observed - missing.reference },
  }
  if (current.kind === 'numeric') {
    const ks = binnedKs(reference.slice(1), observed.slice(1))
    drift.ks = { d: ks.d, p_value: ks.pValue }
    const c = current.counts
    drift.out_of_range_rate = present === 0 ? 0 : (c[1] + c[c.length - 1]) / present
  }
  return drift
}

/**
 * The drift report of one version: `windows` are consecutive windows of equal length, oldest
 * first, the last one current. Each statistic and verdict is the current window's, and each
 * distribution lists every window's PSI and verdict as `windows`; the alert rule runs over them, so the report needs no memory of earlier calls and every replica
 * computes the same one. Thresholds are the baseline's, calibrated for 1,000-row windows: for a
 * bigger window they are conservative (the no-drift spread only shrinks with more rows).
 */
export const driftReport = (baseline: ReportBaseline, importantFeatures: ReadonlySet<string>, windows: readonly DriftCounts[]): DriftReport => {
  const current = windows[windows.length - 1]
  if (!current) throw new RangeError('a drift report needs at least one window')
  const features = baseline.features.map((f, i) =>
    featureDrift(f, importantFeatures.has(f.name), windows.map((w) => w.features[i]), windows),
  )
  const critical = features.filter((f) => f.verdict === 'critical')
  const alerting = features.filter((f) => f.alerting)
  const overwhelmed = (list: FeatureDrift[]) => list.length >= DATASET_CRITICAL_SHARE * features.length || list.some((f) => f.important)
  const datasetVerdict: Verdict = current.rows < MIN_WINDOW_ROWS
    ? 'insufficient'
    : critical.length > 0 && overwhelmed(critical)
      ? 'critical'
      : features.some((f) => f.verdict === 'warning' || f.verdict === 'critical')
        ? 'warning'
        : 'ok'
  const { health } = current
  const p50 = latencyQuantile(health, 0.5)
  const p95 = latencyQuantile(health, 0.95)
  return {
    model: current.model,
    version: current.version,
    window: {
      minutes: current.to_minute - current.from_minute + 1,
      from_minute: current.from_minute,
      to_minute: current.to_minute,
      evaluated_windows: windows.length,
    },
    rows: current.rows,
    dataset: {
      verdict: datasetVerdict,
      critical_features: critical.map((f) => f.name),
      alerting: alerting.length > 0 && overwhelmed(alerting),
      alerting_features: alerting.map((f) => f.name),
    },
    features,
    prediction: {
      ...distribution(baseline.prediction.counts, windows.map((w) => w.prediction.counts), windows, baseline.prediction.thresholds),
      counts: current.prediction.counts,
      baseline_counts: baseline.prediction.counts,
      class_counts: current.prediction.class_counts,
      nan_outputs: current.prediction.nan_outputs,
    },
    health: {
      requests: health.requests,
      errors: health.errors,
      error_rate: health.requests === 0 ? 0 : health.errors / health.requests,
      rows: health.rows,
      p50_ms: p50 === undefined ? null : p50 / 1000,
      p95_ms: p95 === undefined ? null : p95 / 1000,
    },
  }
}
