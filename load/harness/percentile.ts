/** The p-th percentile of ascending samples: the smallest sample with at least p% of them at or below it. */
export const percentile = (sorted: ArrayLike<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
