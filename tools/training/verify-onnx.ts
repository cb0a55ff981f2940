import { InferenceSession, Tensor } from 'onnxruntime-node'
import type { Matrix } from './dataset.ts'
import type { GraphNames } from './onnx-writer.ts'

/** FP32 graph against the FP64 reference: differences past this mean the graph is wrong. */
const ONNX_TOLERANCE = 1e-5

/**
 * Runs the serialized graph in onnxruntime on `x` and fails unless it reproduces `expected` (the
 * TypeScript forward pass) within tolerance. Returns the largest difference seen.
 */
export const verifyOnnx = async (
  model: Uint8Array, names: Pick<GraphNames, 'input' | 'output'>, x: Matrix, expected: ArrayLike<number>,
): Promise<number> => {
  const session = await InferenceSession.create(model, { intraOpNumThreads: 1, graphOptimizationLevel: 'all' })
  try {
    const result = await session.run({ [names.input]: new Tensor('float32', x.data, [x.rows, x.cols]) })
    const actual = result[names.output].data
    if (!(actual instanceof Float32Array) || actual.length !== expected.length) {
      throw new Error(`onnxruntime returned ${actual.length} values of ${actual.constructor.name}, expected ${expected.length} floats`)
    }
    let worst = 0
    for (let i = 0; i < actual.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]))
    // Math.max propagates NaN, and NaN fails `<=`: a NaN output cannot pass as "no difference".
    if (!(worst <= ONNX_TOLERANCE)) {
      throw new Error(`onnxruntime output differs from the TypeScript forward pass by ${worst}`)
    }
    return worst
  } finally {
    await session.release()
  }
}
