import { performance } from 'node:perf_hooks'
import type { ModelMetadata, TensorMetadata } from '../../shared/protocol.ts'
import { Batcher, type BatchRequest, type BatchResult } from '../batcher/batcher.ts'
import { InferenceError } from '../errors.ts'
import type { Executor } from '../executor/executor.ts'
import type { ModelConfig } from '../repository/model-config.ts'
import type { VersionOnDisk } from '../repository/repository.ts'
import type { DriftCounter } from '../monitor/drift/counter.ts'
import type { DriftMonitor } from '../monitor/drift/monitor.ts'
import { batchSeries, requestSeries, type Metrics, type RequestSeries } from '../monitor/metrics.ts'
import type { Tracing } from '../monitor/tracing/index.ts'
import { VersionStats } from '../monitor/stats.ts'
import { ResponseTemplate } from '../infer/response.ts'
import type { Logger } from '../logger.ts'
import { sameNames, startExecutor, type PlacementSetting } from './placement.ts'

export interface LoadOptions {
  logger?: Logger
  /** The inference threads' entry module (tests substitute one that can be made to fail). */
  workerUrl?: URL
  /** Off serves each request alone (for comparison runs and the Lambda tier). */
  batching: boolean
  metrics?: Metrics
  /** Counts live traffic into the baseline's bins; versions without a baseline are not counted. */
  drift?: DriftMonitor
  /** Spans for each batch, when tracing is on. */
  tracing?: Tracing
  /** Where sessions run (default `worker`); see startExecutor. */
  placement?: PlacementSetting
  mainThreadMaxUs?: number
  /** Told once when the version can no longer serve (`broken` is set). */
  onBroken?: (version: ModelVersion) => void
}

/**
 * One loaded, warmed-up version of a model: its executor, batcher and counters. Replaced
 * versions forward late arrivals to their successor while they drain, so a reload loses nothing.
 */
export class ModelVersion {
  lastUsed = performance.now()
  /** Why the version can no longer serve (its sessions are gone and could not be recreated). */
  broken: string | undefined
  /** Its answers' HTTP body, around a prefix built once. */
  readonly responseTemplate: ResponseTemplate
  private successor: ModelVersion | undefined
  private draining = false

  private constructor(
    readonly model: string,
    readonly version: number,
    readonly config: ModelConfig,
    readonly disk: VersionOnDisk,
    private readonly executor: Executor,
    readonly batcher: Batcher,
    readonly stats: VersionStats,
    readonly loadSeconds: number,
    readonly drift: DriftCounter | undefined,
    /** Where its requests are counted for Prometheus, bound once here so the hot path only calls them. */
    readonly requestSeries: RequestSeries | undefined,
  ) {
    this.responseTemplate = new ResponseTemplate(model, String(version))
  }

  static async load(model: string, config: ModelConfig, disk: VersionOnDisk, options: LoadOptions): Promise<ModelVersion> {
    const started = performance.now()
    const executor = await startExecutor(model, config, disk, options)
    const version = String(disk.version)
    const metrics = options.metrics
    const labels = { model, version }
    const batching = options.batching && config.max_batch_size > 0 && config.dynamic_batching !== undefined
    const stats = new VersionStats()
    const series = metrics && batchSeries(metrics, labels)
    const batcher = new Batcher(
      executor,
      {
        batching,
        // Requests are checked against these dims before they queue: without a -1 they all match them.
        fixedShape: config.inputs.every((input) => !input.dims.includes(-1)),
        maxBatchSize: Math.max(1, config.max_batch_size),
        dispatch: config.dynamic_batching?.dispatch ?? 'idle',
        maxQueueDelayUs: config.dynamic_batching?.max_queue_delay_us ?? 0,
        preferredBatchSizes: config.dynamic_batching?.preferred_batch_sizes ?? [],
        maxQueueSize: config.dynamic_batching?.max_queue_size ?? 4096,
      },
      {
        batch(size, reason, computeUs, queueUs) {
          stats.batch(computeUs)
          if (!series) return
          series.size(size)
          series.reason(reason)
          series.computeDuration(computeUs / 1e6)
          for (const us of queueUs) series.queueDuration(us / 1e6)
        },
        refused(reason) {
          metrics?.rejected.inc({ model, reason })
        },
      },
      options.tracing?.batches({ model, version, provider: executor.provider }),
    )
    const drift = await options.drift?.open(model, disk.version, config, disk.path)
    const loadSeconds = (performance.now() - started) / 1000
    metrics?.modelLoadDuration.observe(labels, loadSeconds)
    const loaded = new ModelVersion(model, disk.version, config, disk, executor, batcher, stats, loadSeconds, drift, metrics && requestSeries(metrics, labels))
    executor.watch({
      restored: () => batcher.wake(),
      failed: (error, instancesLeft) => {
        options.logger?.error('inference instance could not be replaced', { model, version, instances_left: instancesLeft, error: error.message })
        if (instancesLeft > 0) return
        loaded.broken = `no inference instance left: ${error.message}`
        batcher.fail(versionNotReady(model, disk.version))
        options.onBroken?.(loaded)
      },
    })
    return loaded
  }

  get provider(): string {
    return this.executor.provider
  }

  get ready(): boolean {
    return !this.draining && this.broken === undefined
  }

  /** Default deadline from config, in ms; undefined when the model sets none. */
  get defaultTimeoutMs(): number | undefined {
    const us = this.config.dynamic_batching?.default_timeout_us ?? 0
    return us > 0 ? us / 1000 : undefined
  }

  /** Estimated resident bytes: the weights once per session. */
  get sizeBytes(): number {
    return this.disk.sizeBytes * this.config.instance_count
  }

  submit(request: BatchRequest): Promise<BatchResult> {
    this.lastUsed = performance.now()
    if (this.draining && this.successor) return this.successor.submit(request)
    return this.batcher.submit(request)
  }

  /** Stops taking traffic (late arrivals go to `successor`), finishes what was accepted, frees the sessions. */
  async retire(successor?: ModelVersion): Promise<void> {
    if (successor && sameNames(this.config.inputs.map((i) => i.name), successor.config.inputs.map((i) => i.name))) {
      this.successor = successor
    }
    this.draining = true
    await this.batcher.drain()
    await this.executor.close()
  }

  metadata(versions?: string[]): ModelMetadata {
    const batched = this.config.max_batch_size > 0
    const tensor = (t: { name: string; datatype: TensorMetadata['datatype']; dims: number[] }): TensorMetadata => ({
      name: t.name,
      datatype: t.datatype,
      shape: batched ? [-1, ...t.dims] : [...t.dims],
    })
    return {
      name: this.model,
      ...(versions ? { versions } : {}),
      platform: 'onnxruntime_onnx',
      inputs: this.config.inputs.map(tensor),
      outputs: this.config.outputs.map(tensor),
    }
  }
}

/** A client's refusal: why the version is not ready is in the logs and the repository index, not here. */
export const versionNotReady = (model: string, version: number | string, retryAfterS = 1): InferenceError =>
  new InferenceError(503, `model "${model}" version ${version} is not ready`, { 'retry-after': String(retryAfterS) }, 'not_ready')

/** The repository refused the model's config.json: permanent until its owner fixes it, so 409 with the reason, no Retry-After. */
export const configRefused = (model: string, reason: string): InferenceError =>
  new InferenceError(409, `model "${model}" configuration refused: ${reason}`, {}, 'config_refused')
