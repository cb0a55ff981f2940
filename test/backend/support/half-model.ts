import { writeModelConfig, writeModelVersion } from '../../../tools/training/repository-writer.ts'
import { encodeModel, tensorInfo } from './onnx-graph.ts'

const WIDTH = 4

/** An FP16 model that returns its input (`values` [batch, 4] → `same`): what goes in must come back. */
export const writeHalfIdentityModel = async (repositoryDir: string, name: string): Promise<void> => {
  const half = (tensor: string) => tensorInfo(tensor, 'FLOAT16', ['batch', WIDTH])
  const model = encodeModel({ name, node: [{ opType: 'Identity', name: 'same', input: ['values'], output: ['same'] }], input: [half('values')], output: [half('same')] })
  await writeModelConfig(repositoryDir, {
    name,
    platform: 'onnxruntime',
    max_batch_size: 8,
    inputs: [{ name: 'values', datatype: 'FP16', dims: [WIDTH] }],
    outputs: [{ name: 'same', datatype: 'FP16', dims: [WIDTH] }],
    instance_count: 1,
    execution_providers: ['cpu'],
    intra_op_threads: 1,
    version_policy: { latest: 1 },
  })
  await writeModelVersion(repositoryDir, name, 1, { 'model.onnx': model })
}
