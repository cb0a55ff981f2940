import { join } from 'node:path'
import { initLayers } from './mlp.ts'
import { networkToOnnx } from './onnx-writer.ts'
import { createRandom } from './random.ts'
import { DYNAMIC_BATCHING, writeModelConfig, writeModelVersion } from './repository-writer.ts'

export interface ComputeBoundOptions {
  name?: string
  inputs?: number
  hidden?: number[]
  outputs?: number
  seed?: number
  maxBatchSize?: number
}

export interface ComputeBoundModel {
  name: string
  /** The version folder holding model.onnx and MANIFEST. */
  versionDir: string
  /** Weights and biases, for reporting FLOPs per row (about 2 × parameters). */
  parameters: number
}

const INPUT = 'features'
const OUTPUT = 'probabilities'

/**
 * Writes an untrained MLP big enough that compute, not HTTP and JSON, dominates a request: the
 * benchmark's case where batching decides throughput. Weights are seeded, so runs are comparable.
 */
export const buildComputeBoundModel = async (repositoryDir: string, options: ComputeBoundOptions = {}): Promise<ComputeBoundModel> => {
  const { name = 'compute-bound', inputs = 64, hidden = [1024, 1024, 1024], outputs = 2, seed = 1, maxBatchSize = 64 } = options
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) throw new Error(`maxBatchSize must be a positive integer, got ${maxBatchSize}`)
  if (outputs < 2) throw new Error(`a softmax classifier needs at least 2 outputs, got ${outputs}`)
  const layers = initLayers([inputs, ...hidden, outputs], createRandom(seed))
  await writeModelConfig(repositoryDir, {
    name,
    platform: 'onnxruntime',
    max_batch_size: maxBatchSize,
    inputs: [{ name: INPUT, datatype: 'FP32', dims: [inputs] }],
    outputs: [{ name: OUTPUT, datatype: 'FP32', dims: [outputs] }],
    dynamic_batching: {
      ...DYNAMIC_BATCHING,
      preferred_batch_sizes: DYNAMIC_BATCHING.preferred_batch_sizes.filter((size) => size <= maxBatchSize),
    },
    instance_count: 1,
    execution_providers: ['cuda', 'cpu'],
    intra_op_threads: 1,
    version_policy: { latest: 1 },
    postprocess: { output: OUTPUT, labels: Array.from({ length: outputs }, (_, i) => `class_${i}`) },
  })
  await writeModelVersion(repositoryDir, name, 1, { 'model.onnx': networkToOnnx({ layers }, { name, input: INPUT, output: OUTPUT }) })
  return {
    name,
    versionDir: join(repositoryDir, name, '1'),
    parameters: layers.reduce((n, l) => n + l.weight.length + l.bias.length, 0),
  }
}
