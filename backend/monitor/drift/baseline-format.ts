import { UNSEEN_CATEGORY } from '../../../shared/feature-spec.ts'

/**
 * The shape of `baseline.json` that the monitor reads and the offline model builder writes. The
 * bin rule lives here, with the runtime, because live traffic must be counted into exactly the
 * bins the baseline was taken with.
 */

export const BASELINE_FORMAT = 2
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
 * A feature's reference counts in the layout every PSI over it uses: missing first, then
 * numeric: the `edges.length + 1` bins (live values below `min` or above `max` count into the
 * first or last bin, so there is no out-of-range cell);
 * categorical: the listed categories in baseline order, `__other__`, `__unseen__`.
 */
export const psiReference = (feature: NumericBins | CategoricalBins): number[] =>
  feature.kind === 'numeric'
    ? [feature.missing, ...feature.counts]
    : [feature.missing, ...[...feature.categories, OTHER_CATEGORY, UNSEEN_CATEGORY].map((c) => feature.counts[c])]

/** Bin of `value`: the number of edges at or below it, so a value on an edge goes to the upper bin. */
export const binIndex = (edges: readonly number[], value: number): number => {
  let lo = 0
  let hi = edges.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (edges[mid] <= value) lo = mid + 1
    else hi = mid
  }
  return lo
}
