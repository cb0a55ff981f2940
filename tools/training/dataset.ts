import { encodeInstance, featureOffsets, specWidth, type FeatureSpec, type FeatureValue } from '../../shared/feature-spec.ts'

/** Rows packed exactly as the server packs a request: row-major FP32, `encodeInstance` layout. */
export interface Matrix {
  rows: number
  cols: number
  data: Float32Array
}

export const encodeRows = (spec: FeatureSpec, instances: readonly Readonly<Record<string, FeatureValue>>[]): Matrix => {
  const cols = specWidth(spec)
  const data = new Float32Array(instances.length * cols)
  instances.forEach((instance, i) => encodeInstance(spec, instance, data.subarray(i * cols, (i + 1) * cols)))
  return { rows: instances.length, cols, data }
}

/** `(x - offset) * scale` per column; the model graph applies it, so clients send raw values. */
export interface Scaling {
  offset: Float32Array
  scale: Float32Array
}

/**
 * Standardizes numeric columns with the training mean and standard deviation; one-hot and boolean
 * columns are already on a unit scale and pass through unchanged.
 */
export const fitScaling = (spec: FeatureSpec, x: Matrix): Scaling => {
  const offset = new Float32Array(x.cols)
  const scale = new Float32Array(x.cols).fill(1)
  const offsets = featureOffsets(spec)
  spec.features.forEach((f, i) => {
    if (f.type !== 'number' && f.type !== 'integer') return
    const col = offsets[i]
    let sum = 0
    for (let r = 0; r < x.rows; r++) sum += x.data[r * x.cols + col]
    const mean = sum / x.rows
    let squares = 0
    for (let r = 0; r < x.rows; r++) squares += (x.data[r * x.cols + col] - mean) ** 2
    const sd = Math.sqrt(squares / x.rows)
    offset[col] = mean
    scale[col] = sd > 0 ? 1 / sd : 1
  })
  return { offset, scale }
}

/** What the graph's Sub/Mul compute, in FP32 like the graph does. */
export const applyScaling = ({ offset, scale }: Scaling, x: Matrix): Matrix => {
  const data = new Float32Array(x.data.length)
  for (let i = 0; i < data.length; i++) {
    const col = i % x.cols
    data[i] = Math.fround(Math.fround(x.data[i] - offset[col]) * scale[col])
  }
  return { rows: x.rows, cols: x.cols, data }
}
