import type { ControllerDriftReport, DriftWindow, Verdict } from '../../../shared/drift/report.ts'
import {
  binnedKs, binnedWasserstein, chiSquare, jensenShannonDistance, meanShift, noDriftWasserstein, noDriftWassersteinLevel, psi, totalVariation, twoSidedNormalP, type MeanShift, type Moments,
} from '../../../shared/drift/statistics.ts'
import { binnedQuality, onBinEdge, type QualityFigures } from '../../../shared/quality.ts'
import { PREDICTION_LOGIT_BOUND, clampedLogit, psiReference, type DriftThresholds, type EffectThresholds } from './baseline-format.ts'
import type { ClampedSums, DriftCounts, FeatureCounts } from './counts.ts'
import { latencyQuantile } from './latency.ts'
import type { ReportBaseline } from './report-baseline.ts'
import { type AlertState, alertRule } from './alert-rule.ts'
import { MIN_WINDOW_ROWS } from '../../../shared/drift/window-rows.ts'

export { MIN_WINDOW_ROWS }

/** Share of critical features that makes the whole input critical. */
export const DATASET_CRITICAL_SHARE = 0.3
/**
 * The least category shift worth an alert, in total variation: 2Φ(0.05) − 1, the TVD between two
 * unit normals 0.1 sd apart, so the categorical gate asks for the same least effect as the
 * numeric one's floor (SMD 0.1).
 */
export const MIN_TVD = 0.04
/**
 * The categorical evidence levels, as chi-square p-values: the false-alarm rate per undrifted
 * window of the numeric gate's floors, |z| ≥ 3 (warning) and ≥ 4 (critical).
 */
export const CATEGORY_P_WARNING = twoSidedNormalP(3)
export const CATEGORY_P_CRITICAL = twoSidedNormalP(4)

export interface Rate {
  reference: number
  observed: number
  delta: number
}

/**
 * The location shift of the current window (numeric features over their values clamped to the
 * baseline's [min, max], the prediction over its clamped logit): `smd`, `se` and `z` are null
 * when the window has fewer than 2 values or the reference none to spare (sd 0).
 */
export type EffectSize = {
  smd: number | null
  se: number | null
  z: number | null
  /** Wasserstein-1 between the binned distributions (even within a bin) over the reference sd. */
  wasserstein: number | null
  /**
   * Levels of `wasserstein` for this window's rows: where an undrifted window stays except with the
   * false-alarm rate of |z| ≥ z_warning (z_critical); null when the window cannot tell.
   */
  wasserstein_thresholds: { warning: number; critical: number } | null
  mean: { reference: number; observed: number | null }
  sd: { reference: number; observed: number | null }
  thresholds: Pick<EffectThresholds, 'min_effect' | 'z_warning' | 'z_critical'>
  /**
   * The worse of two gates. Location: |smd| ≥ min_effect and |z| ≥ z_critical (z_warning).
   * Shape (a scale change, a split a mean does not show): wasserstein ≥ min_effect (W1 over the
   * sd of a pure location shift is |smd|, so the same least effect) and ≥ its critical (warning) level.
   */
  verdict: Verdict
  smd_verdict: Verdict
  wasserstein_verdict: Verdict
}

/**
 * A categorical feature's shift: total variation (the size) gated by the chi-square test of the
 * same cells (the evidence). Critical (warning) when tvd ≥ min_tvd and p ≤ p_critical (p_warning).
 */
export type CategoryShift = {
  tvd: number
  p_value: number
  thresholds: { min_tvd: number; p_warning: number; p_critical: number }
  verdict: Verdict
}

/** Type aliases, not interfaces: the shared contract's loose feature object needs their implicit index signature. */
export type DistributionDrift = {
  rows: number
  psi: number
  js_distance: number
  thresholds: { warning: number; critical: number }
  /** The worst of PSI's verdict and, where there is one, the effect size's (numeric) or the category shift's (categorical). */
  verdict: Verdict
  /** Critical windows in a row, ending with this one. */
  consecutive_critical: number
  /** The alert rule's state: on after 3 critical windows in a row, off after 3 clean ones. */
  alerting: boolean
  /** Every window evaluated, oldest first, each with its own PSI (SMD and z) and verdict; the last is the current one. */
  windows: DriftWindow[]
  effect_size?: EffectSize
  /** Categorical features (booleans too): total variation over the PSI cells, gated by chi-square. */
  category_shift?: CategoryShift
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
  prediction: DistributionDrift & {
    counts: number[]
    baseline_counts: number[]
    class_counts: [number, number]
    nan_outputs: number
    /** CBPE: the current window's rows per bin with the baseline's label-positive share of that bin (no labels needed). */
    estimated_quality: QualityFigures
  }
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

const SEVERITY: Record<Verdict, number> = { insufficient: 0, ok: 1, warning: 2, critical: 3 }
const worse = (a: Verdict, b: Verdict): Verdict => (SEVERITY[b] > SEVERITY[a] ? b : a)

/** An effect size's verdict: both gates must open, the size's and the evidence's. */
export const effectVerdictOf = (rows: number, shift: MeanShift | undefined, { min_effect, z_warning, z_critical }: EffectSize['thresholds']): Verdict => {
  if (rows < MIN_WINDOW_ROWS) return 'insufficient'
  if (!shift || Math.abs(shift.smd) < min_effect) return 'ok'
  const z = Math.abs(shift.z)
  return z >= z_critical ? 'critical' : z >= z_warning ? 'warning' : 'ok'
}

/** The shape gate: Wasserstein-1 over the reference sd against the least effect and its no-drift levels. */
export const wassersteinVerdictOf = (rows: number, distance: number | null, levels: EffectSize['wasserstein_thresholds'], minEffect: number): Verdict => {
  if (rows < MIN_WINDOW_ROWS) return 'insufficient'
  if (distance === null || levels === null || distance < minEffect) return 'ok'
  return distance >= levels.critical ? 'critical' : distance >= levels.warning ? 'warning' : 'ok'
}

/** The categorical gate: both the size (TVD) and the evidence (chi-square p-value) must open. */
export const categoryVerdictOf = (rows: number, tvd: number, pValue: number): Verdict =>
  rows < MIN_WINDOW_ROWS ? 'insufficient' : tvd < MIN_TVD ? 'ok' : pValue <= CATEGORY_P_CRITICAL ? 'critical' : pValue <= CATEGORY_P_WARNING ? 'warning' : 'ok'

/** A categorical window's shift against the reference cells. */
export const categoryShift = (reference: readonly number[], observed: readonly number[]): CategoryShift => {
  const tvd = totalVariation(reference, observed)
  const { pValue } = chiSquare(reference, observed)
  return {
    tvd,
    p_value: pValue,
    thresholds: { min_tvd: MIN_TVD, p_warning: CATEGORY_P_WARNING, p_critical: CATEGORY_P_CRITICAL },
    verdict: categoryVerdictOf(sum(observed), tvd, pValue),
  }
}

/** Mean and sd of `n` values from their clamped sums (population sd, as the baseline's). */
const momentsOf = (n: number, { low, sum: total, sum_squares }: ClampedSums): Moments => {
  if (n === 0) return { n, mean: Number.NaN, sd: Number.NaN }
  const offset = total / n
  return { n, mean: low + offset, sd: Math.sqrt(Math.max(0, sum_squares / n - offset * offset)) }
}

/** One window's side of an effect size: its moments, and its counts over the reference bins. */
interface EffectWindow {
  moments: Moments
  bins: readonly number[]
}

/** What an effect size compares: the reference's moments, levels and bins (with their bounds, for Wasserstein-1) against each window's. */
interface EffectInput {
  reference: Moments
  thresholds: EffectSize['thresholds']
  bounds: readonly number[]
  referenceBins: readonly number[]
  windows: readonly EffectWindow[]
}

/** A window's span, the minutes its counts cover. */
type Span = Pick<DriftCounts, 'from_minute' | 'to_minute'>

/** One window's shape statistic: Wasserstein-1 over the reference sd, with its no-drift levels for the window's rows. */
interface Shape {
  distance: number | null
  levels: EffectSize['wasserstein_thresholds']
}

/** Each effect window's shape statistic; the no-drift spread depends on the reference alone, so it is taken once. */
const shapesOf = (effect: EffectInput): Shape[] => {
  const { reference, thresholds, bounds, referenceBins } = effect
  const spread = reference.sd > 0 ? noDriftWasserstein(bounds, referenceBins) : undefined
  return effect.windows.map(({ moments, bins }) => {
    if (!spread || moments.n === 0) return { distance: null, levels: null }
    const level = (z: number) => noDriftWassersteinLevel(spread, moments.n, reference.n, twoSidedNormalP(z)) / reference.sd
    return {
      distance: binnedWasserstein(bounds, referenceBins, bins) / reference.sd,
      levels: { warning: level(thresholds.z_warning), critical: level(thresholds.z_critical) },
    }
  })
}

/**
 * PSI and its verdict for each window (oldest first), with the effect size's where there is one
 * (`effect.windows` pairs with `windows`: the location and shape gates) or the category shift's
 * (`categorical`), and the alert rule run over the worst of them.
 */
const distribution = (
  reference: readonly number[], windows: readonly (readonly number[])[], spans: readonly Span[], thresholds: Pick<DriftThresholds, 'warning' | 'critical'>,
  gates: { effect?: EffectInput; categorical?: boolean } = {},
): DistributionDrift => {
  const { effect, categorical = false } = gates
  let state: AlertState = alertRule.initial
  const shifts = effect?.windows.map((w) => meanShift(effect.reference, w.moments))
  const shapes = effect && shapesOf(effect)
  const categories = categorical ? windows.map((observed) => categoryShift(reference, observed)) : undefined
  const history = windows.map((observed, i): DriftWindow => {
    const rows = sum(observed)
    const value = psi(reference, observed)
    const span = { from_minute: spans[i].from_minute, to_minute: spans[i].to_minute, rows, psi: value }
    let verdict = verdictOf(rows, value, thresholds)
    const window: DriftWindow = { ...span, verdict }
    if (effect && shifts && shapes) {
      const shift = shifts[i]
      const shape = shapes[i]
      verdict = worse(verdict, worse(effectVerdictOf(rows, shift, effect.thresholds), wassersteinVerdictOf(rows, shape.distance, shape.levels, effect.thresholds.min_effect)))
      Object.assign(window, { smd: shift?.smd ?? null, z: shift?.z ?? null, wasserstein: shape.distance })
    }
    if (categories) {
      verdict = worse(verdict, categories[i].verdict)
      window.tvd = categories[i].tvd
    }
    window.verdict = verdict
    state = alertRule.next(state, verdict)
    return window
  })
  const last = history[history.length - 1]
  if (!last) throw new RangeError('a drift report needs at least one window')
  const current = windows[windows.length - 1]
  const drift: DistributionDrift = {
    rows: last.rows,
    psi: last.psi,
    js_distance: jensenShannonDistance(reference, current),
    thresholds: { warning: thresholds.warning, critical: thresholds.critical },
    verdict: last.verdict,
    consecutive_critical: state.critical,
    alerting: state.alerting,
    windows: history,
  }
  if (effect && shifts && shapes) drift.effect_size = effectSize(effect, shifts[shifts.length - 1], shapes[shapes.length - 1], last.rows)
  if (categories) drift.category_shift = categories[categories.length - 1]
  return drift
}

/** The current window's effect size, in full. */
const effectSize = ({ reference, thresholds, windows }: EffectInput, shift: MeanShift | undefined, shape: Shape, rows: number): EffectSize => {
  const window = windows[windows.length - 1]
  const told = window.moments.n > 0
  const { min_effect, z_warning, z_critical } = thresholds
  const smdVerdict = effectVerdictOf(rows, shift, thresholds)
  const wassersteinVerdict = wassersteinVerdictOf(rows, shape.distance, shape.levels, min_effect)
  return {
    smd: shift?.smd ?? null,
    se: shift?.se ?? null,
    z: shift?.z ?? null,
    wasserstein: shape.distance,
    wasserstein_thresholds: shape.levels,
    mean: { reference: reference.mean, observed: told ? window.moments.mean : null },
    sd: { reference: reference.sd, observed: told ? window.moments.sd : null },
    thresholds: { min_effect, z_warning, z_critical },
    verdict: worse(smdVerdict, wassersteinVerdict),
    smd_verdict: smdVerdict,
    wasserstein_verdict: wassersteinVerdict,
  }
}

/** A numeric window's present values' moments (its PSI vector's cells after the missing one). */
const presentMoments = (live: FeatureCounts, vector: readonly number[]): Moments => {
  if (!live.sums) throw new Error(`numeric feature "${live.name}" was counted without its sums`)
  return momentsOf(sum(vector) - vector[0], live.sums)
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
  const effect = baseline.kind === 'numeric'
    ? {
        reference: { n: referenceRows - reference[0], mean: baseline.effect_size.mean, sd: baseline.effect_size.sd },
        thresholds: baseline.effect_size.thresholds,
        bounds: [baseline.min, ...baseline.edges, baseline.max],
        referenceBins: reference.slice(1),
        windows: windows.map((w, i) => ({ moments: presentMoments(w, vectors[i]), bins: vectors[i].slice(1) })),
      }
    : undefined
  const drift: FeatureDrift = {
    name: baseline.name,
    kind: current.kind,
    important,
    ...distribution(reference, vectors, spans, baseline.thresholds, { effect, categorical: baseline.kind === 'categorical' }),
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

type PredictionBaseline = ReportBaseline['prediction']

/** The prediction's effect size over its clamped logit, its bins bounded by the edges' logits. */
const predictionEffect = (baseline: PredictionBaseline, windows: readonly DriftCounts[]): EffectInput => ({
  reference: { n: sum(baseline.counts), mean: baseline.effect_size.mean, sd: baseline.effect_size.sd },
  thresholds: baseline.effect_size.thresholds,
  bounds: [-PREDICTION_LOGIT_BOUND, ...baseline.edges.map(clampedLogit), PREDICTION_LOGIT_BOUND],
  referenceBins: baseline.counts,
  windows: windows.map(({ prediction }) => ({ moments: momentsOf(sum(prediction.counts), prediction.logit_sums), bins: prediction.counts })),
})

/**
 * Confidence-based performance estimation: each bin's live rows are label-positive at the share
 * the reference rows in that bin were, and score at the reference rows' mean. It holds while the
 * model's calibration does (covariate shift), not when the label's relation to the inputs moves.
 */
export const estimatedQuality = (baseline: PredictionBaseline, threshold: number | undefined, counts: readonly number[]): QualityFigures => {
  const { positives, mean_probability: meanProbability } = baseline.calibration
  // A bin the reference never reached has no calibration: its mean score is the best guess.
  const bins = counts.map((rows, i) => ({ rows, positives: rows * (baseline.counts[i] > 0 ? positives[i] / baseline.counts[i] : meanProbability[i]) }))
  // A threshold between bin edges leaves the binned accuracy unknown, not the rest of the report.
  const classifiable = threshold === undefined || onBinEdge(baseline.edges, threshold)
  return binnedQuality(baseline.edges, classifiable ? threshold : null, bins, { meanProbability })
}

/**
 * The drift report of one version: `windows` are consecutive windows of equal length, oldest
 * first, the last one current. Each statistic and verdict is the current window's, and each
 * distribution lists every window's PSI and verdict as `windows`; the alert rule runs over them, so the report needs no memory of earlier calls and every replica
 * computes the same one. Thresholds are the baseline's, calibrated for 1,000-row windows: for a
 * bigger window PSI's are conservative (the no-drift spread only shrinks with more rows), and the
 * effect size's minimum keeps a large window's tiny standard error from making a trivial shift
 * critical. `threshold` is the config's (undefined: argmax), for the estimated accuracy.
 */
export const driftReport = (baseline: ReportBaseline, importantFeatures: ReadonlySet<string>, windows: readonly DriftCounts[], threshold?: number): DriftReport => {
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
      ...distribution(baseline.prediction.counts, windows.map((w) => w.prediction.counts), windows, baseline.prediction.thresholds, { effect: predictionEffect(baseline.prediction, windows) }),
      counts: current.prediction.counts,
      baseline_counts: baseline.prediction.counts,
      class_counts: current.prediction.class_counts,
      nan_outputs: current.prediction.nan_outputs,
      estimated_quality: estimatedQuality(baseline.prediction, threshold, current.prediction.counts),
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
