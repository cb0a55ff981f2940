/**
 * What the manifests are sized from, measured with `tsx infra/k8s/measure.ts` (the real backend
 * under tsx with the bundled credit-risk models, autocannon 8 s per concurrency, on this 2-core
 * machine, Node 24, 2026-12-02, load average 0.46 at the start):
 *
 *   warm RSS 184 MiB; peak RSS (VmHWM) under load 370 MiB
 *   c=4  794 rows/s   p50 4 ms  p99 11 ms  mean depth  2.7
 *   c=8  1690 rows/s  p50 4 ms  p99 11 ms  mean depth  6.1
 *   c=16 2700 rows/s  p50 4 ms  p99 17 ms  mean depth 11.8
 *   c=32 3337 rows/s  p50 8 ms  p99 27 ms  mean depth 12.7
 *   c=64 3075 rows/s  p50 18 ms p99 65 ms  mean depth 22.2
 *
 * Re-run it on a node of the target pool and change the numbers here: the GPU pool's figures are
 * not measurable on this machine (no GPU), so the CPU ones stand in for both variants.
 */
export const MEASURED = {
  peakRssMi: 370,
  /** Rows waiting plus running (the autoscaling gauge) at the knee, c=16..32. */
  kneeDepthRows: 12.7,
  kneeRowsPerSecond: 3337,
} as const

/** Headroom over the measured peak: heap growth with traffic shape and a GC cycle's garbage. */
const HEADROOM = 1.5
/**
 * Model memory budget passed as MODEL_MEMORY_BUDGET_MB, added on top of the measured peak (whose
 * bundled models weigh kilobytes), so the LRU unloads a model before the kernel kills the pod.
 */
export const MODEL_BUDGET_MI = 512
/**
 * Host memory of the CUDA context and onnxruntime's CUDA provider libraries, not measured here
 * (no GPU on this machine): an allowance until `measure.ts` runs on a GPU node.
 */
export const CUDA_HOST_ALLOWANCE_MI = 1024

const roundUp = (n: number, step: number): number => Math.ceil(n / step) * step

/** Memory request (= limit: memory is not compressible, so no overcommit) in MiB. */
export const memoryMi = (gpu: boolean): number =>
  roundUp(MEASURED.peakRssMi * HEADROOM, 64) + MODEL_BUDGET_MI + (gpu ? CUDA_HOST_ALLOWANCE_MI : 0)

/**
 * Per-replica target of the summed queue-depth gauge. Throughput stops growing past the knee
 * (c=16→32 buys 24% more rows/s for twice the p50; c=64 loses rows/s) while the depth there is
 * 12-13 rows; Little's law agrees: 3,337 rows/s × ~4 ms in the batcher (2 ms max queue delay plus
 * the run) ≈ 13 rows. Aiming each replica at the knee keeps latency at its p99 ≤ 27 ms point.
 */
export const TARGET_ROWS_PER_REPLICA = Math.floor(MEASURED.kneeDepthRows)
