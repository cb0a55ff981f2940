/**
 * What the manifests are sized from: the figures `tsx load/k8s/main.ts` printed for the real
 * backend under load (the README's Kubernetes sizing table has the full run). Re-run it on a node
 * of the target pool and change them here: the GPU pool cannot be measured on a machine without a
 * GPU, so the CPU figures stand in for both variants.
 */
export const MEASURED = {
  peakRssMi: 357,
  /** Rows waiting plus running (the autoscaling gauge) at the knee: the concurrency past which rows/s stops growing. */
  kneeDepthRows: 6.6,
  kneeRowsPerSecond: 16374,
  /**
   * One replica's ceiling with a core of its own, rows/s: full 64-row batches at the service time
   * `npx tsx load/sim/measure-service/main.ts` measured (the backend's CPU time per request under
   * batched load, plus the engine's per-batch cost). CPU time per request does not change when a
   * load generator shares the cores; the knee above does (autocannon burns the other core and
   * caps rows/s), so this, not the knee, is what a pod that requests one core drains. The
   * autoscaling simulator reads it from the rendered autoscaler, so the trigger and the simulated
   * replica share this one figure. Re-measure on the target pool.
   */
  replicaRowsPerSecond: 29344,
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
 * (no GPU on this machine): an allowance until `load/k8s/main.ts` runs on a GPU node.
 */
export const CUDA_HOST_ALLOWANCE_MI = 1024

const roundUp = (n: number, step: number): number => Math.ceil(n / step) * step

/** Memory request (= limit: memory is not compressible, so no overcommit) in MiB. */
export const memoryMi = (gpu: boolean): number =>
  roundUp(MEASURED.peakRssMi * HEADROOM, 64) + MODEL_BUDGET_MI + (gpu ? CUDA_HOST_ALLOWANCE_MI : 0)

/**
 * Per-replica target of the summed queue-depth gauge: the depth at the throughput knee, past which
 * more concurrency buys little throughput for much latency (Little's law gives the same figure from
 * the knee's rows/s and the time a row spends in the batcher).
 */
export const TARGET_ROWS_PER_REPLICA = Math.floor(MEASURED.kneeDepthRows)

/** The HPA controller does not act while a metric is within this share above its target. */
export const HPA_TOLERANCE = 0.1

/**
 * Share of a replica's capacity (MEASURED.replicaRowsPerSecond) it is asked to carry on average:
 * a spike can double the rate within a second, and until new pods are ready (a minute or more) the
 * running ones must carry it, at up to the HPA's tolerance above the target: share × (1 + 0.1) × 2 ≤ 1.
 * (The name predates the capacity figure; it is kept because other code imports it.)
 */
export const TARGET_SHARE_OF_KNEE = 0.45

/**
 * Per-replica target of the arrival rate (the leading trigger): queue depth only rises once a replica
 * is already near saturation, the arrival rate rises with the traffic that will saturate it.
 */
export const TARGET_REQUESTS_PER_SECOND_PER_REPLICA = Math.round(TARGET_SHARE_OF_KNEE * MEASURED.replicaRowsPerSecond)
