import { createHash } from 'node:crypto'
import { featureOffsets, featureWidth, specWidth, type Feature } from '../../../shared/feature-spec.ts'
import type { ModelConfig } from '../../repository/model-config.ts'
import type { DriftBaseline } from './baseline-file.ts'
import { PREDICTION_LOGIT_BOUND, stepScale } from './baseline-format.ts'
import type { ClampedSums, DriftCounts, FeatureCounts } from './counts.ts'
import { LATENCY_BOUNDS_US } from './latency.ts'

/** Where one feature's columns are in a tensor row and where its counts are in the flat array. */
export interface FeatureSlots {
  name: string
  kind: FeatureCounts['kind']
  /** First tensor column, and how many (categories + 1 for a category, else 1). */
  column: number
  columns: number
  /** First flat index of its counts, and how many. */
  offset: number
  size: number
  /** Numeric only: the baseline's edges, min and max, rounded to FP32 like the tensor values. */
  edges: number[]
  min: number
  max: number
  /** Numeric only: flat index of Σ steps (Σ steps² follows), and steps per unit (see `sumSteps`); -1 and 0 otherwise. */
  sums: number
  scale: number
  /** Category only: the count (relative to `offset`) a hot tensor column goes to. */
  slotOfColumn: Int32Array
}

/**
 * The flat count array of one version: every feature's counts in spec order (a numeric one's
 * followed by its two sums), then the prediction bins, class counts, NaN outputs, the two logit
 * sums, counted rows, and the per-request health counters with the latency histogram. One minute
 * of traffic is one such array.
 */
export interface DriftLayout {
  model: string
  version: number
  /** Input tensor the features are packed in, and its columns per row. */
  input: string
  width: number
  /** Output tensor of class probabilities ([rows, 2]). */
  output: string
  features: FeatureSlots[]
  prediction: { offset: number; edges: number[]; classes: number; nan: number; sums: number; scale: number }
  /** Probability of labels[1] at or above which it is the class; undefined: argmax, as the edge does. */
  threshold: number | undefined
  rows: number
  health: { requests: number; errors: number; rows: number; latency: number }
  size: number
  /** Hash of what gives each flat index its meaning: only equal layouts may add their counts. */
  fingerprint: string
}

const product = (dims: readonly number[]) => dims.reduce((a, b) => a * b, 1)

/**
 * The layout of a version's counts, from its config (feature spec, postprocess) and its
 * baseline. Throws, saying why, when the three disagree: counting into bins that do not
 * match the baseline would only produce false drift.
 */
export const driftLayout = (model: string, version: number, config: ModelConfig, baseline: DriftBaseline): DriftLayout => {
  const spec = config.features
  const post = config.postprocess
  if (!spec) throw new Error('the config has no feature spec')
  if (!post || post.labels.length !== 2) throw new Error('drift is counted for binary models: postprocess needs exactly two labels')
  const input = config.inputs.find((i) => i.name === spec.input)
  const width = specWidth(spec)
  if (input?.datatype !== 'FP32' || product(input.dims) !== width) {
    throw new Error(`input "${spec.input}" is not an FP32 tensor of ${width} columns per row as the feature spec packs it`)
  }
  const output = config.outputs.find((o) => o.name === post.output)
  if (!output || (output.datatype !== 'FP32' && output.datatype !== 'FP64') || product(output.dims) !== 2) {
    throw new Error(`output "${post.output}" is not a float tensor of 2 probabilities per row`)
  }
  if (baseline.features.length !== spec.features.length) {
    throw new Error(`the baseline has ${baseline.features.length} features, the spec ${spec.features.length}`)
  }
  const columns = featureOffsets(spec)
  let offset = 0
  const features = spec.features.map((feature, i): FeatureSlots => {
    const slots = featureSlots(feature, baseline.features[i], columns[i], offset)
    offset += slots.size + (slots.sums === -1 ? 0 : 2)
    return slots
  })
  const classes = offset + baseline.prediction.edges.length + 1
  const nan = classes + 2
  const scale = stepScale(-PREDICTION_LOGIT_BOUND, PREDICTION_LOGIT_BOUND)
  const prediction = { offset, edges: baseline.prediction.edges, classes, nan, sums: nan + 1, scale }
  const rows = prediction.sums + 2
  const health = { requests: rows + 1, errors: rows + 2, rows: rows + 3, latency: rows + 4 }
  const size = health.latency + LATENCY_BOUNDS_US.length + 1
  const layout = { model, version, input: spec.input, width, output: post.output, features, prediction, threshold: post.threshold, rows, health, size }
  return { ...layout, fingerprint: fingerprintOf(layout) }
}

const featureSlots = (feature: Feature, base: DriftBaseline['features'][number], column: number, offset: number): FeatureSlots => {
  if (base.name !== feature.name) throw new Error(`baseline feature "${base.name}" stands where the spec has "${feature.name}"`)
  const common = { name: feature.name, column, columns: featureWidth(feature), offset, edges: [], min: 0, max: 0, sums: -1, scale: 0, slotOfColumn: new Int32Array(0) }
  switch (feature.type) {
    case 'number':
    case 'integer':
      if (base.kind !== 'numeric') throw new Error(`baseline feature "${base.name}" is ${base.kind}, the spec says ${feature.type}`)
      // The tensor holds FP32: a value exactly on a double edge (quantile edges are data values)
      // arrives rounded and would fall on the wrong side of the unrounded edge.
      const size = base.edges.length + 4
      const [min, max] = [Math.fround(base.min), Math.fround(base.max)]
      return { ...common, kind: 'numeric', size, edges: base.edges.map(Math.fround), min, max, sums: offset + size, scale: stepScale(min, max) }
    case 'boolean':
      if (base.kind !== 'categorical' || base.categories.join() !== 'false,true') throw new Error(`baseline feature "${base.name}" is not the boolean categories ["false", "true"]`)
      return { ...common, kind: 'boolean', size: 3 }
    case 'category': {
      if (base.kind !== 'categorical') throw new Error(`baseline feature "${base.name}" is numeric, the spec says category`)
      const unknown = base.categories.filter((c) => !feature.categories.includes(c))
      if (unknown.length > 0) throw new Error(`baseline feature "${base.name}" has categories the spec does not: ${unknown.join(', ')}`)
      const other = base.categories.length + 1
      const slotOfColumn = Int32Array.from([...feature.categories, undefined], (c) => {
        if (c === undefined) return other + 1
        const at = base.categories.indexOf(c)
        return at === -1 ? other : at + 1
      })
      return { ...common, kind: 'categorical', size: base.categories.length + 3, slotOfColumn }
    }
  }
}

const fingerprintOf = (layout: Omit<DriftLayout, 'fingerprint' | 'model' | 'version'>): string =>
  createHash('sha256')
    .update(JSON.stringify({ ...layout, features: layout.features.map((f) => ({ ...f, slotOfColumn: [...f.slotOfColumn] })), latency: LATENCY_BOUNDS_US }))
    .digest('hex')
    .slice(0, 12)

/** The two sums at flat index `at`, from grid steps back to the values' units. */
const clampedSums = (flat: Float64Array, at: number, scale: number, low: number, high: number): ClampedSums => ({
  low,
  high,
  sum: scale === 0 ? 0 : flat[at] / scale,
  sum_squares: scale === 0 ? 0 : flat[at + 1] / (scale * scale),
})

/** The flat counts of a window as the documented {@link DriftCounts}. */
export const toDriftCounts = (layout: DriftLayout, flat: Float64Array, from: number, to: number): DriftCounts => {
  const slice = (start: number, length: number) => Array.from(flat.subarray(start, start + length))
  const { prediction, health } = layout
  const feature = (f: FeatureSlots): FeatureCounts => {
    const counts: FeatureCounts = { name: f.name, kind: f.kind, counts: slice(f.offset, f.size) }
    if (f.sums !== -1) counts.sums = clampedSums(flat, f.sums, f.scale, f.min, f.max)
    return counts
  }
  return {
    model: layout.model,
    version: layout.version,
    from_minute: from,
    to_minute: to,
    rows: flat[layout.rows],
    features: layout.features.map(feature),
    prediction: {
      counts: slice(prediction.offset, prediction.edges.length + 1),
      class_counts: [flat[prediction.classes], flat[prediction.classes + 1]],
      nan_outputs: flat[prediction.nan],
      logit_sums: clampedSums(flat, prediction.sums, prediction.scale, -PREDICTION_LOGIT_BOUND, PREDICTION_LOGIT_BOUND),
    },
    health: {
      requests: flat[health.requests],
      errors: flat[health.errors],
      rows: flat[health.rows],
      latency_bounds_us: [...LATENCY_BOUNDS_US],
      latency_counts: slice(health.latency, LATENCY_BOUNDS_US.length + 1),
    },
  }
}
