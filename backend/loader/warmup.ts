import type { ModelConfig } from '../repository/model-config.ts'
import { allocate, type TensorMap } from '../executor/tensor.ts'

/**
 * Batch sizes to run once before a version reports ready: powers of two up to the maximum plus
 * the preferred sizes, since some providers pay seconds on the first run at a new shape.
 */
export const warmupBatchSizes = (config: ModelConfig): number[] => {
  if (config.max_batch_size === 0) return [1]
  const sizes = new Set<number>([config.max_batch_size, ...(config.dynamic_batching?.preferred_batch_sizes ?? [])])
  for (let size = 1; size < config.max_batch_size; size *= 2) sizes.add(size)
  return [...sizes].sort((a, b) => a - b)
}

/** Zero-filled inputs for one warm-up run; variable dims become 1. */
export const warmupFeeds = (config: ModelConfig, batchSize: number): TensorMap =>
  Object.fromEntries(
    config.inputs.map((input) => {
      const inner = input.dims.map((d) => (d === -1 ? 1 : d))
      const dims = config.max_batch_size > 0 ? [batchSize, ...inner] : inner
      const length = dims.reduce((a, b) => a * b, 1)
      return [input.name, { datatype: input.datatype, dims, data: allocate(input.datatype, length) }]
    }),
  )
