import type { TensorMap, TensorValues } from '../../executor/tensor.ts'
import { binIndex } from '../../../shared/drift/statistics.ts'
import { PREDICTION_LOGIT_BOUND, clampedLogit, sumSteps } from './baseline-format.ts'
import type { DriftCounts } from './counts.ts'
import { latencyBucket } from './latency.ts'
import { toDriftCounts, type DriftLayout, type FeatureSlots } from './layout.ts'
import { minuteOf } from '../../../shared/drift/report.ts'
import { RETAINED_MINUTES, type MinuteBuckets } from './minute-buckets.ts'

export type Clock = () => number

/** Totals of minutes `from`…`to` of a counter: from memory alone, or merged with the other replicas'. */
export type WindowTotals = (counter: DriftCounter, from: number, to: number) => Promise<Float64Array>

/**
 * Adds `counts` (one observation's rows, counted) into minute `minute` of `counter` once per `id`,
 * however often it is sent; rejects when that could not be confirmed (the sender resends).
 */
export type ObservedRows = (counter: DriftCounter, id: string, minute: number, counts: Float64Array) => Promise<void>

/** The count (relative to the feature's offset) of one row's value. */
const slotOf = (f: FeatureSlots, x: Float32Array, at: number): number => {
  if (f.kind === 'numeric') {
    const v = x[at]
    if (Number.isNaN(v)) return 0
    if (v < f.min) return 1
    if (v > f.max) return f.size - 1
    return 2 + binIndex(f.edges, v)
  }
  if (f.kind === 'boolean') {
    const v = x[at]
    return v === 0 ? 1 : v === 1 ? 2 : 0
  }
  // The first hot column wins; none (all zeros, NaN) is missing.
  for (let j = 0; j < f.columns; j++) if (x[at + j] === 1) return f.slotOfColumn[j]
  return 0
}

const isFloat = (data: TensorValues | undefined): data is Float32Array | Float64Array =>
  data instanceof Float32Array || data instanceof Float64Array

/**
 * Live traffic of one model version counted into its baseline's bins, per minute. Called on
 * the hot path: per row, one binary search or one hot-column scan and one increment per
 * feature, two more adds per present numeric value and one logarithm for the prediction's
 * logit; nothing is allocated.
 */
export class DriftCounter {
  private faulted = false

  constructor(
    readonly layout: DriftLayout,
    readonly buckets: MinuteBuckets,
    private readonly now: Clock,
    private readonly totals: WindowTotals,
    /** Told about the first fault only: a broken counter must not flood the log once per request. */
    private readonly onFault: (err: unknown) => void,
    private readonly observed: ObservedRows,
  ) {}

  /** Output tensor the counter needs in every result, even when a client asked for others only. */
  get output(): string {
    return this.layout.output
  }

  /** Counts the rows of one answered request. Never throws: counting must not fail a request. */
  record(inputs: TensorMap, rows: number, outputs: TensorMap): void {
    try {
      const { x, p } = this.tensors(inputs, rows, outputs)
      this.count(this.buckets.at(minuteOf(this.now())), x, rows, p)
    } catch (err) {
      if (!this.faulted) this.onFault(err)
      this.faulted = true
    }
  }

  /**
   * Counts rows served without reaching this version (the edge's prediction cache answered
   * them) with the probabilities they were served with: features and prediction like `record`,
   * never the request health figures (no request, error or latency). Applied once per `id`
   * across resends; rejects when that is not confirmed (in doubt: resend with the same id).
   */
  async observe(id: string, inputs: TensorMap, rows: number, outputs: TensorMap): Promise<void> {
    const { x, p } = this.tensors(inputs, rows, outputs)
    const counts = new Float64Array(this.layout.size)
    this.count(counts, x, rows, p)
    await this.observed(this, id, minuteOf(this.now()), counts)
  }

  /** Counts one request to the version; `failed` for faults of the backend (execution error, deadline expiry). */
  request(latencyUs: number, rows: number, failed: boolean): void {
    const counts = this.buckets.at(minuteOf(this.now()))
    const { health } = this.layout
    counts[health.requests]++
    if (failed) counts[health.errors]++
    counts[health.rows] += rows
    counts[health.latency + latencyBucket(latencyUs)]++
  }

  /**
   * The counts of the last `minutes` minutes (1…180), the current, partial one included. With
   * Redis they are every replica's (see DriftMonitor), and the call fails when Redis does.
   */
  async window(minutes: number, now = this.now()): Promise<DriftCounts> {
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > RETAINED_MINUTES) {
      throw new RangeError(`a window is 1 to ${RETAINED_MINUTES} whole minutes, not ${minutes}`)
    }
    const to = minuteOf(now)
    const from = to - minutes + 1
    return toDriftCounts(this.layout, await this.totals(this, from, to), from, to)
  }

  private tensors(inputs: TensorMap, rows: number, outputs: TensorMap): { x: Float32Array; p: Float32Array | Float64Array } {
    const { input, output, width } = this.layout
    const x = inputs[input]?.data
    const p = outputs[output]?.data
    if (!(x instanceof Float32Array) || x.length < rows * width || !isFloat(p) || p.length < rows * 2) {
      throw new Error(`expected ${rows} rows of "${input}" (FP32) and of "${output}" (2 probabilities)`)
    }
    return { x, p }
  }

  private count(counts: Float64Array, x: Float32Array, rows: number, p: Float32Array | Float64Array): void {
    const { features, width, prediction, threshold } = this.layout
    for (let r = 0; r < rows; r++) {
      const row = r * width
      for (let i = 0; i < features.length; i++) {
        const f = features[i]
        const slot = slotOf(f, x, row + f.column)
        counts[f.offset + slot]++
        if (f.sums !== -1 && slot !== 0) {
          const steps = sumSteps(x[row + f.column], f.min, f.max, f.scale)
          counts[f.sums] += steps
          counts[f.sums + 1] += steps * steps
        }
      }
      const low = p[2 * r]
      const high = p[2 * r + 1]
      if (!Number.isFinite(low) || !Number.isFinite(high)) {
        counts[prediction.nan]++
        continue
      }
      counts[prediction.offset + binIndex(prediction.edges, high)]++
      const steps = sumSteps(clampedLogit(high), -PREDICTION_LOGIT_BOUND, PREDICTION_LOGIT_BOUND, prediction.scale)
      counts[prediction.sums] += steps
      counts[prediction.sums + 1] += steps * steps
      const positive = threshold === undefined ? high > low : high >= threshold
      counts[prediction.classes + (positive ? 1 : 0)]++
    }
    counts[this.layout.rows] += rows
  }
}
