import { modelConfig, type ModelConfig } from '../../../../backend/repository/model-config.ts'
import type { DriftBaseline } from '../../../../backend/monitor/drift/baseline-file.ts'
import type { TensorMap } from '../../../../backend/executor/tensor.ts'

/**
 * A small binary model for counting: `score` (numeric, baseline edges on values that FP32
 * cannot hold exactly), `color` (category; the baseline keeps two of four, in its own order)
 * and `flag` (boolean). Tensor row: [score, red, green, blue, violet, __unseen__, flag].
 */
export const config: ModelConfig = modelConfig.parse({
  name: 'toy',
  platform: 'onnxruntime',
  max_batch_size: 64,
  inputs: [{ name: 'x', datatype: 'FP32', dims: [7] }],
  outputs: [{ name: 'p', datatype: 'FP32', dims: [2] }],
  features: {
    input: 'x',
    features: [
      { name: 'score', type: 'number', min: 0, max: 10 },
      { name: 'color', type: 'category', categories: ['red', 'green', 'blue', 'violet'] },
      { name: 'flag', type: 'boolean' },
    ],
  },
  postprocess: { output: 'p', labels: ['no', 'yes'], threshold: 0.7 },
})

export const baseline: DriftBaseline = {
  features: [
    { name: 'score', kind: 'numeric', edges: [0.35, 1.1, 2.2], min: 0.1, max: 9.9 },
    { name: 'color', kind: 'categorical', categories: ['blue', 'red'] },
    { name: 'flag', kind: 'categorical', categories: ['false', 'true'] },
  ],
  prediction: { edges: [0.25, 0.5, 0.75] },
}

export const WIDTH = 7

/** One tensor row; `color` is a column index (0…4, 4 = __unseen__) or undefined for no hot column. */
export const row = (score: number, color: number | undefined, flag: number): number[] => {
  const r = [score, 0, 0, 0, 0, 0, flag]
  if (color !== undefined) r[1 + color] = 1
  return r
}

/** Inputs and outputs of one request, as the batcher hands them back. */
export const request = (rows: number[][], positives: number[]): { inputs: TensorMap; outputs: TensorMap } => ({
  inputs: { x: { datatype: 'FP32', dims: [rows.length, WIDTH], data: new Float32Array(rows.flat()) } },
  outputs: { p: { datatype: 'FP32', dims: [rows.length, 2], data: new Float32Array(positives.flatMap((p) => [1 - p, p])) } },
})
