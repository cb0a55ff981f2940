import { meanShift, noDriftPsiQuantile, psi, type Moments } from '../../shared/drift/statistics.ts'
import type { DriftThresholds, EffectThresholds } from '../../backend/monitor/drift/baseline-format.ts'

/**
 * PSI alert levels for one binned distribution, calibrated for windows of `WINDOW` live rows
 * against the baseline's reference counts. The design's 0.1 / 0.2 are floors: a window of 1,000
 * rows is noisy, and where even undrifted data would cross a floor too often, the level is raised.
 */

/** Rows per monitoring window; below this the monitor gives no verdict. */
export const WINDOW = 1_000
/** Held-out windows per calibration: enough for a usable standard deviation. */
export const MIN_WINDOWS = 40
export const PSI_WARNING = 0.1
export const PSI_CRITICAL = 0.2
/**
 * Floors of the effect size's levels. Half of Cohen's "small" (0.2 sd) is the least shift worth an
 * alert however many rows prove it. |z| ≥ 4 happens in 6e-5 of undrifted windows if z is normal;
 * z's tails are thin (unlike PSI's χ²-like skew), so 4 held-out sd above its mean, not 5, suffices.
 */
export const MIN_EFFECT = 0.1
export const Z_WARNING = 3
export const Z_CRITICAL = 4

/** Consecutive `WINDOW`-row slices of held-out rows; a trailing partial window is not a window. */
export const heldOutWindows = <T>(rows: readonly T[]): T[][] => {
  const count = Math.floor(rows.length / WINDOW)
  if (count < MIN_WINDOWS) {
    throw new Error(`${rows.length} held-out rows make ${count} windows of ${WINDOW}; calibration needs ${MIN_WINDOWS}`)
  }
  return Array.from({ length: count }, (_, i) => rows.slice(i * WINDOW, (i + 1) * WINDOW))
}

/**
 * Levels for a reference count vector, given the count vectors of held-out windows in the same
 * layout. Each level is the largest of the design's floor, the analytic bound and the held-out
 * PSI's mean + 3σ (warning) or + 5σ (critical); the empirical bound catches what the asymptotic
 * one misses on sparse bins. Critical is above warning term by term (0.2 > 0.1, the 0.999
 * quantile > the 0.99, 5σ > 3σ), so it can only tie when held-out windows all score alike.
 */
export const calibrateThresholds = (reference: readonly number[], windows: readonly (readonly number[])[]): DriftThresholds => {
  const referenceRows = reference.reduce((sum, c) => sum + c, 0)
  const referenceBins = reference.filter((c) => c > 0).length
  const scores = windows.map((w) => psi(reference, w))
  const mean = scores.reduce((sum, s) => sum + s, 0) / scores.length
  const sd = Math.sqrt(scores.reduce((sum, s) => sum + (s - mean) ** 2, 0) / (scores.length - 1))
  const analyticP99 = noDriftPsiQuantile(0.99, referenceBins, WINDOW, referenceRows)
  const analyticP999 = noDriftPsiQuantile(0.999, referenceBins, WINDOW, referenceRows)
  return {
    statistic: 'psi',
    window: WINDOW,
    warning: Math.max(PSI_WARNING, analyticP99, mean + 3 * sd),
    critical: Math.max(PSI_CRITICAL, analyticP999, mean + 5 * sd),
    no_drift: {
      reference_bins: referenceBins,
      analytic_p99: analyticP99,
      analytic_p999: analyticP999,
      held_out_windows: windows.length,
      held_out_mean: mean,
      held_out_sd: sd,
    },
  }
}

/**
 * Effect-size levels for reference moments, given the moments of held-out windows. The minimum
 * effect is MIN_EFFECT or the largest |SMD| of a held-out window, whichever is larger, so no
 * undrifted window was ever big enough; the z levels are the floors or |mean| + 3 (warning) and
 * + 4 (critical) held-out sd of z, which catches a standard error that understates the spread.
 */
export const calibrateEffect = (reference: Moments, windows: readonly Moments[]): EffectThresholds => {
  const shifts = windows.map((w) => meanShift(reference, w)).filter((s) => s !== undefined)
  const zs = shifts.map((s) => s.z)
  const mean = zs.length === 0 ? 0 : zs.reduce((sum, z) => sum + z, 0) / zs.length
  const sd = zs.length < 2 ? 0 : Math.sqrt(zs.reduce((sum, z) => sum + (z - mean) ** 2, 0) / (zs.length - 1))
  const maxAbsSmd = shifts.reduce((max, s) => Math.max(max, Math.abs(s.smd)), 0)
  return {
    statistic: 'smd',
    window: WINDOW,
    min_effect: Math.max(MIN_EFFECT, maxAbsSmd),
    z_warning: Math.max(Z_WARNING, Math.abs(mean) + 3 * sd),
    z_critical: Math.max(Z_CRITICAL, Math.abs(mean) + 4 * sd),
    no_drift: { held_out_windows: windows.length, z_mean: mean, z_sd: sd, max_abs_smd: maxAbsSmd },
  }
}
