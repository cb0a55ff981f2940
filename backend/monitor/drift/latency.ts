import { binIndex } from '../../../shared/drift/statistics.ts'
import type { HealthCounts } from './counts.ts'

/**
 * Latency bucket bounds in µs, 64 µs to 67 s in steps of √2. Fixed for every replica and
 * version, so histograms merge by adding and a quantile read from the sum is the quantile of
 * all the traffic, within a bucket's width (±20 %).
 */
export const LATENCY_BOUNDS_US: readonly number[] = Array.from({ length: 41 }, (_, k) => Math.round(64 * 2 ** (k / 2)))

/** Bucket of a latency: the number of bounds at or below it. */
export const latencyBucket = (us: number): number => binIndex(LATENCY_BOUNDS_US, us)

/**
 * The q-quantile (0 ≤ q ≤ 1) of a latency histogram, interpolated linearly inside its bucket as
 * Prometheus' histogram_quantile does; a quantile in the open last bucket reads as its lower
 * bound. Undefined when the histogram is empty.
 */
export const latencyQuantile = ({ latency_bounds_us: bounds, latency_counts: counts }: Pick<HealthCounts, 'latency_bounds_us' | 'latency_counts'>, q: number): number | undefined => {
  const total = counts.reduce((a, b) => a + b, 0)
  if (total === 0) return undefined
  const rank = q * total
  let below = 0
  for (let i = 0; i < bounds.length; i++) {
    const n = counts[i]
    if (n > 0 && below + n >= rank) {
      const lower = i === 0 ? 0 : bounds[i - 1]
      return lower + (bounds[i] - lower) * ((rank - below) / n)
    }
    below += n
  }
  return bounds[bounds.length - 1]
}
