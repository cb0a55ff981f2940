import { UNSEEN_CATEGORY } from '../../../shared/feature-spec.ts'

/**
 * The shape of `baseline.json` that the monitor reads and the offline model builder writes. The
 * bin rule lives here, with the runtime, because live traffic must be counted into exactly the
 * bins the baseline was taken with.
 */

export const BASELINE_FORMAT = 3
export const OTHER_CATEGORY = '__other__'

export interface NumericBins {
  name: string
  kind: 'numeric'
  /** Ascending, unique; `edges.length + 1` bins. */
  edges: number[]
  counts: number[]
  min: number
  max: number
  /** Rows without a value. */
  missing: number
  missing_rate: number
}

export interface CategoricalBins {
  name: string
  kind: 'categorical'
  /** By descending count; the rest of the known categories count as `__other__`. */
  categories: string[]
  counts: Record<string, number>
  missing: number
  missing_rate: number
}

/**
 * PSI alert levels for one binned distribution, calibrated for windows of `window` live rows
 * against the baseline's reference counts.
 */
export interface DriftThresholds {
  statistic: 'psi'
  /** Rows per window the levels hold for. */
  window: number
  warning: number
  critical: number
  /** Where PSI lands when nothing has drifted, the evidence for raising the floors. */
  no_drift: {
    /** Bins with reference mass: b, for b − 1 degrees of freedom. */
    reference_bins: number
    /** (1/window + 1/reference rows) · χ²₀.₉₉(b − 1). */
    analytic_p99: number
    /** The same at the 0.999 quantile. */
    analytic_p999: number
    /** Windows of held-out rows from the training distribution, each scored against the reference. */
    held_out_windows: number
    held_out_mean: number
    held_out_sd: number
  }
}

/**
 * Levels of the standardized mean difference (SMD, live mean − reference mean over the reference
 * sd) for windows of `window` live rows. A window is critical when |SMD| ≥ `min_effect` AND its
 * |z| = |SMD| / SE ≥ `z_critical` (warning: `z_warning`): z says the shift is real, `min_effect`
 * that it is big enough to matter, so a large window does not alert on a trivial shift.
 */
export interface EffectThresholds {
  statistic: 'smd'
  window: number
  min_effect: number
  z_warning: number
  z_critical: number
  /** Held-out windows of the training distribution scored against the reference. */
  no_drift: { held_out_windows: number; z_mean: number; z_sd: number; max_abs_smd: number }
}

/**
 * The reference side of the SMD: mean and sd of the values clamped to the baseline's [min, max]
 * (for the prediction: logit P(labels[1]) within ±PREDICTION_LOGIT_BOUND), on the same grid of
 * SUM_STEPS steps the live sums use, with the levels calibrated for them.
 */
export interface EffectSizeReference {
  mean: number
  sd: number
  thresholds: EffectThresholds
}

/** Steps of the grid a clamped value is rounded to before it is summed. */
export const SUM_STEPS = 4096
/** Beyond ±10 (p within 4.5e-5 of 0 or 1) a logit says nothing more about the score. */
export const PREDICTION_LOGIT_BOUND = 10

/**
 * `value` clamped to [low, high], as whole grid steps above `low` (`scale` = SUM_STEPS / (high − low)):
 * integers, so live sums add exactly across minutes and replicas (Redis HINCRBY is integer-only).
 */
export const sumSteps = (value: number, low: number, high: number, scale: number): number =>
  Math.round((Math.min(high, Math.max(low, value)) - low) * scale)

/** Steps per unit over [low, high]; 0 for a constant feature, whose sums then stay 0. */
export const stepScale = (low: number, high: number): number => (high > low ? SUM_STEPS / (high - low) : 0)

/** logit of P(labels[1]) clamped to ±PREDICTION_LOGIT_BOUND; a score outside [0, 1] counts as 0 or 1, never NaN. */
export const clampedLogit = (p: number): number => {
  const q = Math.min(1, Math.max(0, p))
  return Math.min(PREDICTION_LOGIT_BOUND, Math.max(-PREDICTION_LOGIT_BOUND, Math.log(q / (1 - q))))
}

/**
 * A feature's reference counts in the layout every PSI over it uses: missing first, then
 * numeric: the `edges.length + 1` bins (live values below `min` or above `max` count into the
 * first or last bin, so there is no out-of-range cell);
 * categorical: the listed categories in baseline order, `__other__`, `__unseen__`.
 */
export const psiReference = (feature: NumericBins | CategoricalBins): number[] =>
  feature.kind === 'numeric'
    ? [feature.missing, ...feature.counts]
    : [feature.missing, ...[...feature.categories, OTHER_CATEGORY, UNSEEN_CATEGORY].map((c) => feature.counts[c])]
