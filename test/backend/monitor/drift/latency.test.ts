import { describe, expect, it } from 'vitest'
import { LATENCY_BOUNDS_US, latencyBucket, latencyQuantile } from '../../../../backend/monitor/drift/latency.ts'

/** A histogram with `count` observations of each latency. */
const histogram = (latencies: Array<[us: number, count: number]>) => {
  const latency_counts = new Array<number>(LATENCY_BOUNDS_US.length + 1).fill(0)
  for (const [us, count] of latencies) latency_counts[latencyBucket(us)] += count
  return { latency_bounds_us: [...LATENCY_BOUNDS_US], latency_counts }
}

describe('latency histogram', () => {
  it('has log-spaced bounds from 64 µs to 67 s', () => {
    expect(LATENCY_BOUNDS_US.slice(0, 5)).toEqual([64, 91, 128, 181, 256])
    expect(LATENCY_BOUNDS_US.at(-1)).toBe(67_108_864)
  })

  it('puts a latency on a bound into the bucket above it', () => {
    expect([0, 63.9, 64, 90, 91].map(latencyBucket)).toEqual([0, 0, 1, 1, 2])
    expect(latencyBucket(1e9)).toBe(LATENCY_BOUNDS_US.length)
  })

  it('reads a quantile from the merged histogram of two replicas, interpolated in its bucket', () => {
    const a = histogram([[1_000, 90]])
    const b = histogram([[1_000, 5], [20_000, 5]])
    const merged = { ...a, latency_counts: a.latency_counts.map((n, i) => n + b.latency_counts[i]) }
    // 95 of 100 at 1 ms (bucket [724, 1024)): p50 inside it; p95 is the top of it; p99 in [16384, 23170).
    expect(latencyQuantile(merged, 0.5)).toBeCloseTo(724 + 300 * (50 / 95), 6)
    expect(latencyQuantile(merged, 0.95)).toBe(1024)
    expect(latencyQuantile(merged, 0.99)).toBeCloseTo(16_384 + (23_170 - 16_384) * (4 / 5), 6)
  })

  it('reads the lower bound of the open last bucket, and nothing from an empty histogram', () => {
    expect(latencyQuantile(histogram([[1e9, 3]]), 0.5)).toBe(67_108_864)
    expect(latencyQuantile(histogram([]), 0.5)).toBeUndefined()
  })
})
