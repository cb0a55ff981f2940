import onnxProto from 'onnx-proto'
import { writeModelConfig, writeModelVersion } from '../../../tools/training/repository-writer.ts'
import { encodeModel, tensorInfo } from './onnx-graph.ts'

const { onnx } = onnxProto

/**
 * A model with a variable inner dimension: `values` [batch, length] FP32 → `sum` [batch, 1], each
 * row's sum. Rows of different lengths cannot share a batch, and a wrong row shows in its sum.
 */
export const rowSumOnnx = (): Uint8Array => {
  const axes = Buffer.alloc(8)
  axes.writeBigInt64LE(1n)
  return encodeModel({
    name: 'row-sum',
    node: [{ opType: 'ReduceSum', name: 'sum', input: ['values', 'axes'], output: ['sum'], attribute: [{ name: 'keepdims', type: onnx.AttributeProto.AttributeType.INT, i: 1 }] }],
    initializer: [{ name: 'axes', dims: [1], dataType: onnx.TensorProto.DataType.INT64, rawData: axes }],
    input: [tensorInfo('values', 'FLOAT', ['batch', 'length'])],
    output: [tensorInfo('sum', 'FLOAT', ['batch', 1])],
  })
}

/** Writes the row-sum model as `name` version 1, batching with the given queue delay. */
export const writeRowSumModel = async (repositoryDir: string, name: string, maxQueueDelayUs: number): Promise<void> => {
  await writeModelConfig(repositoryDir, {
    name,
    platform: 'onnxruntime',
    max_batch_size: 16,
    inputs: [{ name: 'values', datatype: 'FP32', dims: [-1] }],
    outputs: [{ name: 'sum', datatype: 'FP32', dims: [1] }],
    dynamic_batching: { max_queue_delay_us: maxQueueDelayUs, preferred_batch_sizes: [], max_queue_size: 256, default_timeout_us: 0 },
    instance_count: 1,
    execution_providers: ['cpu'],
    intra_op_threads: 1,
    version_policy: { latest: 1 },
  })
  await writeModelVersion(repositoryDir, name, 1, { 'model.onnx': rowSumOnnx() })
}
