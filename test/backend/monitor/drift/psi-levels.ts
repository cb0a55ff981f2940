/** A baseline's PSI thresholds for 1,000-row windows, with an inert no-drift calibration record. */
export const psiLevels = (warning: number, critical: number) => ({
  statistic: 'psi' as const,
  window: 1000,
  warning,
  critical,
  no_drift: { reference_bins: 4, analytic_p99: 0, analytic_p999: 0, held_out_windows: 40, held_out_mean: 0, held_out_sd: 0 },
})

/** A baseline's effect-size levels (min |SMD| 0.1, |z| 3 / 4), with an inert calibration record. */
export const effectLevels = {
  statistic: 'smd' as const,
  window: 1000,
  min_effect: 0.1,
  z_warning: 3,
  z_critical: 4,
  no_drift: { held_out_windows: 40, z_mean: 0, z_sd: 1, max_abs_smd: 0 },
}

/** Effect-size levels no effect reaches (min |SMD| and W1 infinite): where a test's verdicts are PSI's alone. */
export const shutEffectLevels = { ...effectLevels, min_effect: Number.POSITIVE_INFINITY }

/** Clamped sums (see ClampedSums) of `n` values with this mean and population sd. */
export const sumsOf = (n: number, mean: number, sd: number, low: number, high: number) => ({
  low,
  high,
  sum: n * (mean - low),
  sum_squares: n * (sd * sd + (mean - low) ** 2),
})
