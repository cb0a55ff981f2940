/**
 * Raw fixed-bin counts of live traffic for one model version over a window of minutes: what
 * the drift statistics and the canary controller read. Always counts, never rates, so minutes
 * and replicas merge by adding and every rate (missing, out-of-range, error) stays computable.
 *
 * The bins are the version's `baseline.json` bins, in the layouts below; a consumer pairs
 * `features[i]` with `baseline.features[i]` (same order, same names).
 */
export interface DriftCounts {
  model: string
  version: number
  /** Epoch minutes (`floor(ms / 60000)`), both inclusive; `to_minute` is the current, partial one. */
  from_minute: number
  to_minute: number
  /** Rows counted into the feature and prediction histograms. */
  rows: number
  features: FeatureCounts[]
  prediction: PredictionCounts
  health: HealthCounts
}

/**
 * `counts` by kind:
 * - `numeric`: `[missing, below_min, bin_0 … bin_k, above_max]`, k = baseline `edges.length`
 *   (NaN is missing; `< min` and `> max` are against the baseline's min and max);
 * - `categorical`: `[missing, ...baseline.categories, __other__, __unseen__]` (a spec category
 *   the baseline folded away is `__other__`; no hot column is missing);
 * - `boolean`: `[missing, false, true]` (a column that is neither 0 nor 1 is missing).
 */
export interface FeatureCounts {
  name: string
  kind: 'numeric' | 'categorical' | 'boolean'
  counts: number[]
  /** Numeric only: sums of the present values clamped to the baseline's [min, max]. */
  sums?: ClampedSums
}

/**
 * Σ(v − low) and Σ(v − low)² over values v clamped to [low, high], each rounded to a grid of
 * (high − low) / 4096 first: whole grid steps underneath, so windows and replicas add them
 * exactly. With the count of values they give mean and variance; `low` and `high` say what was
 * clamped to, as `latency_bounds_us` says what the latency buckets are.
 */
export interface ClampedSums {
  low: number
  high: number
  sum: number
  sum_squares: number
}

export interface PredictionCounts {
  /** Over the probability of labels[1], in the baseline's prediction bins (`edges.length + 1`). */
  counts: number[]
  /** `[labels[0], labels[1]]` by the config threshold (argmax without one), as the edge decides. */
  class_counts: [number, number]
  /** Rows whose probabilities were NaN or infinite: neither binned nor classed. */
  nan_outputs: number
  /** Over logit P(labels[1]) of the binned rows, clamped to ±10. */
  logit_sums: ClampedSums
}

/** Per request, not per row: what the canary compares besides the predictions. */
export interface HealthCounts {
  requests: number
  /** Requests that failed inside the backend: execution errors (500) and deadline expiry (504). */
  errors: number
  /** Rows of the requests answered. */
  rows: number
  /** Bucket i holds latencies in `[bounds[i-1], bounds[i])` (from 0 for the first, unbounded for the last). */
  latency_bounds_us: number[]
  latency_counts: number[]
}
