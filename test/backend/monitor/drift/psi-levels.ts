/** A baseline's PSI thresholds for 1,000-row windows, with an inert no-drift calibration record. */
export const psiLevels = (warning: number, critical: number) => ({
  statistic: 'psi' as const,
  window: 1000,
  warning,
  critical,
  no_drift: { reference_bins: 4, analytic_p99: 0, analytic_p999: 0, held_out_windows: 40, held_out_mean: 0, held_out_sd: 0 },
})
