import { performance } from 'node:perf_hooks'
import type { Span } from '@opentelemetry/api'
import type { BatchReason } from '../../shared/protocol.ts'
import { InferenceError } from '../errors.ts'
import { concatRows, sliceRows, type TensorMap } from '../executor/tensor.ts'
import type { RunResult } from '../executor/executor.ts'
import type { DispatchPolicy } from '../repository/model-config.ts'
import type { BatchSpans } from '../monitor/tracing/index.ts'
import { Due, dueBatch, type BatchPolicy } from './policy.ts'
import { BatchQueue, type Queued } from './queue.ts'

/** What the batcher needs of an executor: how many instances are free, and a way to run a batch. */
export interface BatchExecutor {
  readonly idle: number
  readonly size: number
  run(feeds: TensorMap, outputs: string[]): Promise<RunResult>
}

/** Time (milliseconds on performance.now()'s scale) and timers as the batcher sees them. */
export interface BatcherClock {
  now(): number
  setTimeout(callback: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

const systemClock: BatcherClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
}

export interface BatcherOptions {
  /** Rows per run; requests larger than this are split. */
  maxBatchSize: number
  /** `idle`: send at once to a free instance; `delay`: Triton's timing (the two next options). */
  dispatch: DispatchPolicy
  maxQueueDelayUs: number
  preferredBatchSizes: readonly number[]
  /** Rows that may wait; beyond it requests are refused with 429. */
  maxQueueSize: number
  /** Off: every request runs alone, in arrival order. */
  batching: boolean
  /**
   * Every request has the same non-batch dims (no input has a variable inner dimension): all
   * share one shape key instead of one built per request.
   */
  fixedShape?: boolean
  /** The system clock unless a test drives time itself. */
  clock?: BatcherClock
}

export interface BatchRequest {
  /** Inputs, each with the request's rows as dims[0]. */
  inputs: TensorMap
  rows: number
  outputs: string[]
  /** performance.now() by which the request must have started running. */
  deadline?: number
  /** The request's span when it is traced. */
  span?: Span
}

export interface BatchResult {
  outputs: TensorMap
  queueUs: number
  computeUs: number
  batchSize: number
  batchReason: BatchReason
  /** Sequence number of the batch that served the request (1-based, per batcher). */
  batchSeq: number
}

/** Hooks for metrics; called on the hot path, so they must be cheap. */
export interface BatchObserver {
  batch(size: number, reason: BatchReason, computeUs: number, queueUs: readonly number[]): void
  refused(reason: 'too_many_rows' | 'queue_full' | 'deadline_unmeetable' | 'expired' | 'draining'): void
}

interface Entry extends Queued {
  inputs: TensorMap
  outputs: string[]
  span: Span | undefined
  expiry?: unknown
  resolve(result: BatchResult): void
  reject(err: InferenceError): void
}

const RATE_SMOOTHING = 0.2

/** The one shape of a fixed-shape model's requests. */
const FIXED_SHAPE = ''

/** Input names with their dims past the batch dimension, e.g. `values:5` (variable dims make it differ by request). */
const shapeKey = (inputs: TensorMap): string => {
  let key = ''
  for (const name in inputs) key += `${name}:${inputs[name].dims.slice(1).join('x')};`
  return key
}

/**
 * The dynamic batcher of one model version, with bounded admission and deadlines. A batch only
 * ever leaves for a free executor instance, so the next one forms while the current one runs;
 * when it leaves depends on the dispatch policy:
 *
 * - `idle`: whenever an instance is free, the oldest request's shape goes at once, up to
 *   `maxBatchSize` rows (`full` if that many wait, else `idle`), one batch per free instance.
 *   Submissions are pumped at the end of the event-loop turn, so requests read in the same I/O
 *   poll leave together. While every instance is busy requests only queue, and the instance that
 *   frees up takes them as one batch: batches grow with load, a lone request never waits, and
 *   there is nothing for a delay timer or preferred sizes to decide.
 * - `delay` (Triton's semantics): a batch leaves as soon as `maxBatchSize` rows wait (`full`),
 *   queued requests add up to a preferred size (`preferred`), or the oldest request has waited
 *   `maxQueueDelayUs` (`delay`), even when an instance sat idle meanwhile.
 *
 * As in Triton, only requests of the same shape share a batch (a model with a variable inner
 * dimension gets one batch per shape), and a batch that fails, even while it is being put
 * together, fails its own callers only: nothing thrown leaves the pump.
 */
export class Batcher {
  private readonly queue = new BatchQueue<Entry>()
  private readonly policy: BatchPolicy
  /** The policy's answer, reused by every pump. */
  private readonly due = new Due()
  private runningRows = 0
  private timer: unknown
  private timerAt = Infinity
  private pumpScheduled = false
  private readonly clock: BatcherClock
  private closing = false
  /** Set when the version can no longer run anything: every request is refused with it. */
  private failure: InferenceError | undefined
  private idleWaiters: Array<() => void> = []
  /** Measured throughput of one instance in rows per millisecond, 0 until a batch has run. */
  private rowsPerMs = 0
  private batches = 0

  constructor(
    private readonly executor: BatchExecutor,
    private readonly options: BatcherOptions,
    private readonly observer: BatchObserver = { batch() {}, refused() {} },
    /** Present only when tracing is on. */
    private readonly spans?: BatchSpans,
  ) {
    this.clock = options.clock ?? systemClock
    const { batching, dispatch, maxBatchSize, maxQueueDelayUs, preferredBatchSizes } = options
    this.policy = { batching, dispatch, maxBatchSize, maxQueueDelay: maxQueueDelayUs / 1000, preferredBatchSizes }
  }

  /** Rows waiting plus rows running: the autoscaling signal. */
  get depth(): number {
    return this.queue.rows + this.runningRows
  }

  /** Rows per second all instances drain at, as last measured; 0 before any batch ran. */
  get drainRate(): number {
    return this.rowsPerMs * 1000 * this.executor.size
  }

  submit(request: BatchRequest): Promise<BatchResult> {
    if (this.failure) return Promise.reject(this.failure)
    if (this.closing) {
      this.observer.refused('draining')
      return Promise.reject(new InferenceError(503, 'model version is unloading; retry', { 'retry-after': '1' }, 'draining'))
    }
    try {
      this.admit(request)
    } catch (err) {
      return Promise.reject(err)
    }
    const now = this.clock.now()
    const limit = this.options.batching ? this.options.maxBatchSize : Infinity
    const promise =
      request.rows <= limit
        ? new Promise<BatchResult>((resolve, reject) => this.enqueue(request, now, resolve, reject))
        : this.submitSplit(request, limit, now)
    this.pumpAfterSubmit()
    return promise
  }

  /** Under idle dispatch a free instance takes what arrived in this event-loop turn; when none is free, the next to free up pumps. */
  private pumpAfterSubmit(): void {
    if (this.options.dispatch === 'delay' || !this.options.batching) {
      this.pump()
      return
    }
    if (this.pumpScheduled || this.executor.idle === 0) return
    this.pumpScheduled = true
    setImmediate(() => {
      this.pumpScheduled = false
      this.pump()
    })
  }

  /** Capacity came back (an instance was replaced): send what waited for it. */
  wake(): void {
    this.pump()
  }

  /** The version cannot run anything any more: refuses what is queued and everything after with `error`. */
  fail(error: InferenceError): void {
    this.failure = error
    for (let entry = this.queue.peek(); entry; entry = this.queue.peek()) {
      this.cancel(entry)
      entry.reject(error)
    }
  }

  /** Stops admitting, lets everything queued and running finish, then resolves. */
  drain(): Promise<void> {
    this.closing = true
    this.pump()
    return this.depth === 0 ? Promise.resolve() : new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  private admit({ rows, deadline }: BatchRequest): void {
    const { maxQueueSize } = this.options
    const rate = this.drainRate
    const queuedRows = this.queue.rows
    // More rows than the queue can ever hold: a retry cannot cure it, so it is not a 429.
    if (rows > maxQueueSize) {
      this.observer.refused('too_many_rows')
      throw new InferenceError(413, `request has ${rows} rows, more than this model version can ever queue (max_queue_size ${maxQueueSize}): send at most ${maxQueueSize} rows per request`, {}, 'too_many_rows')
    }
    if (queuedRows + rows > maxQueueSize) {
      this.observer.refused('queue_full')
      const excess = queuedRows + rows - maxQueueSize
      throw new InferenceError(
        429,
        `queue full: ${queuedRows} rows waiting, limit ${maxQueueSize}, request has ${rows}`,
        { 'retry-after': String(retryAfterSeconds(excess, rate)) },
        'queue_full',
      )
    }
    if (deadline !== undefined && rate > 0) {
      const waitMs = ((this.depth + rows) / rate) * 1000
      const leftMs = deadline - this.clock.now()
      if (waitMs > leftMs) {
        this.observer.refused('deadline_unmeetable')
        throw new InferenceError(
          429,
          `deadline cannot be met: predicted wait ${Math.ceil(waitMs)} ms (${this.depth} rows ahead at ${Math.round(rate)} rows/s), ${Math.max(0, Math.floor(leftMs))} ms left`,
          { 'retry-after': String(retryAfterSeconds(this.depth, rate)) },
          'deadline_unmeetable',
        )
      }
    }
  }

  private enqueue(
    request: BatchRequest,
    now: number,
    resolve: (r: BatchResult) => void,
    reject: (e: InferenceError) => void,
  ): Entry {
    const shape = this.options.fixedShape ? FIXED_SHAPE : shapeKey(request.inputs)
    const entry: Entry = { inputs: request.inputs, shape, rows: request.rows, outputs: request.outputs, enqueuedAt: now, span: request.span, settled: false, resolve, reject }
    if (request.deadline !== undefined) {
      entry.expiry = this.clock.setTimeout(() => this.expire(entry), Math.max(0, request.deadline - now))
    }
    this.queue.push(entry)
    return entry
  }

  private submitSplit(request: BatchRequest, limit: number, now: number): Promise<BatchResult> {
    return new Promise((resolve, reject) => {
      const chunks: Entry[] = []
      const results: BatchResult[] = []
      let remaining = Math.ceil(request.rows / limit)
      let failed = false
      const fail = (err: InferenceError) => {
        if (failed) return
        failed = true
        for (const chunk of chunks) this.cancel(chunk)
        reject(err)
      }
      for (let start = 0, index = 0; start < request.rows; start += limit, index++) {
        const rows = Math.min(limit, request.rows - start)
        const inputs = mapTensors(request.inputs, (t) => sliceRows(t, start, rows))
        const chunkRequest = { ...request, inputs, rows }
        const at = index
        chunks.push(
          this.enqueue(chunkRequest, now, (result) => {
            results[at] = result
            if (--remaining === 0 && !failed) resolve(joinResults(results))
          }, fail),
        )
      }
    })
  }

  private expire(entry: Entry): void {
    if (entry.settled) return
    this.cancel(entry)
    this.observer.refused('expired')
    entry.reject(new InferenceError(504, `deadline expired after ${Math.round(this.clock.now() - entry.enqueuedAt)} ms in the queue`, {}, 'expired'))
  }

  private cancel(entry: Entry): void {
    if (!this.queue.remove(entry)) return
    this.clock.clearTimeout(entry.expiry)
    this.notifyIfIdle()
  }

  /** Sends every batch that is due while an instance is free. */
  private pump(): void {
    // Every round takes at least one queued request off the queue, so there can be no more rounds
    // than slots; one more means the queue's bookkeeping is broken, and throwing beats spinning
    // the event loop forever (nothing else would stop it, a test's timeout included).
    let rounds = this.queue.slotsInUse
    for (;;) {
      const now = this.clock.now()
      const due = dueBatch(this.policy, this.queue, now, this.executor.idle > 0, this.closing, this.due)
      if (due.reason === 'wait') {
        // Never, when nothing waits or no instance is free: the next submission or finished batch pumps again.
        if (due.until !== Infinity) this.wakeAt(due.until, now)
        break
      }
      const entries = this.queue.take(due.shape, due.count, due.rows)
      if (rounds-- === 0) throw new Error(`batcher queue is inconsistent: a ${due.reason} batch of ${entries.length} requests after every queued request was sent`)
      for (const entry of entries) this.clock.clearTimeout(entry.expiry)
      this.dispatch(entries, due.reason, now)
    }
  }

  private dispatch(entries: Entry[], reason: BatchReason, now: number): void {
    const rows = entries.reduce((n, e) => n + e.rows, 0)
    const span = this.spans?.start(entries, rows, reason, now)
    const fail = (err: unknown) => {
      const detail = err instanceof Error ? err.message : String(err)
      this.spans?.end(span, detail)
      for (const entry of entries) entry.reject(new InferenceError(500, `inference failed: ${detail}`, {}, 'inference_failed'))
    }
    let feeds: TensorMap
    try {
      feeds = Object.fromEntries(Object.keys(entries[0].inputs).map((name) => [name, concatRows(entries.map((e) => e.inputs[name]))]))
    } catch (err) {
      fail(err)
      this.notifyIfIdle()
      return
    }
    const outputs = [...new Set(entries.flatMap((e) => e.outputs))]
    const queueUs = entries.map((e) => Math.round((now - e.enqueuedAt) * 1000))
    const batchSeq = ++this.batches
    this.runningRows += rows
    this.executor.run(feeds, outputs).then(
      ({ outputs: results, computeUs }) => {
        const elapsedMs = this.clock.now() - now
        const rate = rows / Math.max(elapsedMs, 1e-3)
        this.rowsPerMs = this.rowsPerMs === 0 ? rate : this.rowsPerMs + RATE_SMOOTHING * (rate - this.rowsPerMs)
        this.observer.batch(rows, reason, computeUs, queueUs)
        if (entries.length === 1) {
          // A lone request (always so for models without a batch dimension) takes the outputs whole.
          const [entry] = entries
          this.spans?.end(span)
          entry.resolve({ outputs: pick(results, entry.outputs), queueUs: queueUs[0], computeUs, batchSize: rows, batchReason: reason, batchSeq })
          return
        }
        // Sliced before anyone is answered: outputs that do not split by rows fail every caller alike.
        // Plain loops: this runs once per request of the batch, and mapping into entries to build
        // each answer allocated three arrays per request more than the answer itself.
        let offset = 0
        const answers: TensorMap[] = new Array(entries.length)
        for (let i = 0; i < entries.length; i++) {
          const { outputs: names, rows: count } = entries[i]
          const mine: TensorMap = {}
          for (const name of names) mine[name] = sliceRows(results[name], offset, count)
          answers[i] = mine
          offset += count
        }
        this.spans?.end(span)
        entries.forEach((entry, i) => entry.resolve({ outputs: answers[i], queueUs: queueUs[i], computeUs, batchSize: rows, batchReason: reason, batchSeq }))
      },
      fail,
    ).catch(fail).finally(() => {
      this.runningRows -= rows
      this.pump()
      this.notifyIfIdle()
    })
  }

  private wakeAt(at: number, now: number): void {
    if (this.timer && this.timerAt <= at) return
    this.clock.clearTimeout(this.timer)
    this.timerAt = at
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined
      this.timerAt = Infinity
      this.pump()
    }, Math.max(0, at - now))
  }

  private notifyIfIdle(): void {
    if (this.depth !== 0 || this.idleWaiters.length === 0) return
    this.clock.clearTimeout(this.timer)
    for (const wake of this.idleWaiters.splice(0)) wake()
  }
}

const retryAfterSeconds = (rows: number, rowsPerSecond: number): number =>
  rowsPerSecond > 0 ? Math.max(1, Math.ceil(rows / rowsPerSecond)) : 1

const pick = (tensors: TensorMap, names: readonly string[]): TensorMap =>
  Object.fromEntries(names.map((name) => [name, tensors[name]]))

const mapTensors = (tensors: TensorMap, f: (t: TensorMap[string]) => TensorMap[string]): TensorMap =>
  Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, f(t)]))

/** Reassembles the chunks of a split request in order. */
const joinResults = (parts: BatchResult[]): BatchResult => ({
  outputs: Object.fromEntries(Object.keys(parts[0].outputs).map((name) => [name, concatRows(parts.map((p) => p.outputs[name]))])),
  queueUs: Math.max(...parts.map((p) => p.queueUs)),
  computeUs: parts.reduce((n, p) => n + p.computeUs, 0),
  batchSize: Math.max(...parts.map((p) => p.batchSize)),
  batchReason: parts[parts.length - 1].batchReason,
  batchSeq: parts[parts.length - 1].batchSeq,
})
