import { Executor, type Placement } from '../executor/executor.ts'
import type { Logger } from '../logger.ts'
import type { ModelConfig } from '../repository/model-config.ts'
import type { VersionOnDisk } from '../repository/repository.ts'
import { warmupBatchSizes, warmupFeeds } from './warmup.ts'

/** `auto` measures the version's largest batch on a warm thread and keeps the thread only if the run is long. */
export type PlacementSetting = Placement | 'auto'

export interface PlacementOptions {
  placement?: PlacementSetting
  /** `auto`: the longest a largest-batch run may hold the event loop, in µs, to run on the main thread. */
  mainThreadMaxUs?: number
  workerUrl?: URL
  logger?: Logger
}

const TIMED_RUNS = 5

/** Default of `mainThreadMaxUs`: a stall short against one request's own HTTP work at batch size. */
export const DEFAULT_MAIN_THREAD_MAX_US = 250

/** Whether two lists hold the same tensor names, in any order. */
export const sameNames = (declared: readonly string[], actual: readonly string[]) =>
  declared.length === actual.length && declared.every((n) => actual.includes(n))

// onnxruntime-common hands float16 data to the binding as a Float16Array, which it cannot read;
// the worker threads hide that type from it, the main thread cannot (the server uses it).
const hasHalfPrecision = (config: ModelConfig): boolean => [...config.inputs, ...config.outputs].some((t) => t.datatype === 'FP16')

/** Starts the sessions where the setting says, checks them against the config and warms up every batch size. */
const startWarm = async (config: ModelConfig, disk: VersionOnDisk, placement: Placement, options: PlacementOptions): Promise<Executor> => {
  const executor = await Executor.start({
    modelPath: disk.modelPath,
    modelSha256: disk.modelSha256,
    executionProviders: config.execution_providers,
    intraOpThreads: config.intra_op_threads,
    instanceCount: config.instance_count,
    placement,
    workerUrl: options.workerUrl,
  })
  try {
    const { inputs, outputs } = executor.signature
    const declaredInputs = config.inputs.map((i) => i.name)
    const declaredOutputs = config.outputs.map((o) => o.name)
    if (!sameNames(declaredInputs, inputs) || !sameNames(declaredOutputs, outputs)) {
      throw new Error(`config declares inputs [${declaredInputs}] outputs [${declaredOutputs}], model has inputs [${inputs}] outputs [${outputs}]`)
    }
    for (const size of warmupBatchSizes(config)) {
      const runs = Array.from({ length: executor.size }, () => executor.run(warmupFeeds(config, size), declaredOutputs))
      await Promise.all(runs)
    }
    return executor
  } catch (err) {
    await executor.close()
    throw err
  }
}

/**
 * A warm executor for a version, on worker threads or the main thread. `auto` starts threads
 * (a long first run or a slow load never holds the event loop), times one more largest batch
 * there, and moves to the main thread when that run is at most `mainThreadMaxUs`. A substitute
 * worker entry (tests) and FP16 models stay on threads.
 */
export const startExecutor = async (model: string, config: ModelConfig, disk: VersionOnDisk, options: PlacementOptions): Promise<Executor> => {
  const setting = options.workerUrl || hasHalfPrecision(config) ? 'worker' : (options.placement ?? 'worker')
  if (setting !== 'auto') return startWarm(config, disk, setting, options)
  const threads = await startWarm(config, disk, 'worker', options)
  const largest = Math.max(...warmupBatchSizes(config))
  let batchUs = Infinity
  try {
    // The quickest of a few runs: a thread that was just woken or preempted reads slow once.
    for (let i = 0; i < TIMED_RUNS; i++) {
      batchUs = Math.min(batchUs, (await threads.run(warmupFeeds(config, largest), config.outputs.map((o) => o.name))).computeUs)
    }
  } catch (err) {
    await threads.close()
    throw err
  }
  const maxUs = options.mainThreadMaxUs ?? DEFAULT_MAIN_THREAD_MAX_US
  const placement: Placement = batchUs <= maxUs ? 'main' : 'worker'
  options.logger?.info('executor placement', { model, version: disk.version, placement, batch_rows: largest, batch_us: batchUs, main_thread_max_us: maxUs })
  if (placement === 'worker') return threads
  await threads.close()
  return startWarm(config, disk, 'main', options)
}
