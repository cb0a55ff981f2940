import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import onnxProto from 'onnx-proto'

const { onnx } = onnxProto

/** One step of the graph as load/bench/backend/peers/fastapi-peer.py evaluates it in numpy. */
export type MlpStep =
  | { op: 'sub' | 'mul'; operand: string }
  | { op: 'gemm'; weight: string; bias: string }
  | { op: 'relu' | 'softmax' }

/** graph.json: the steps in order; each named tensor is `<name>.f32` (little-endian FP32) beside it. */
export interface MlpGraph {
  input: string
  output: string
  shapes: Record<string, number[]>
  steps: MlpStep[]
}

const dimsOf = (dims: ReadonlyArray<number | { toNumber(): number }>): number[] => dims.map((d) => (typeof d === 'number' ? d : d.toNumber()))

/** An initializer's values as little-endian FP32 bytes, whichever field the writer used. */
const floatBytes = (tensor: onnxProto.onnx.ITensorProto): Buffer => {
  if (tensor.dataType !== onnx.TensorProto.DataType.FLOAT) throw new Error(`initializer ${tensor.name} is not FP32`)
  if (tensor.rawData && tensor.rawData.length > 0) return Buffer.from(tensor.rawData)
  const bytes = Buffer.alloc((tensor.floatData ?? []).length * 4)
  ;(tensor.floatData ?? []).forEach((v, i) => bytes.writeFloatLE(v, i * 4))
  return bytes
}

/**
 * Reads an MLP's ONNX graph as tools/training/onnx-writer.ts writes it (Sub/Mul scaling, Gemm
 * with Relu between, Softmax) and writes its weights into `dir` for a server outside Node. Any
 * other operator, or a Gemm with transposes or scales, is refused: the copy would answer differently.
 */
export const exportMlpGraph = async (modelPath: string, dir: string): Promise<MlpGraph> => {
  const { graph } = onnx.ModelProto.decode(await readFile(modelPath))
  if (!graph?.node || !graph.initializer || !graph.input?.[0]?.name || !graph.output?.[0]?.name) throw new Error(`${modelPath}: no graph`)
  await mkdir(dir, { recursive: true })
  const shapes: Record<string, number[]> = {}
  for (const tensor of graph.initializer) {
    const name = tensor.name ?? ''
    shapes[name] = dimsOf(tensor.dims ?? [])
    await writeFile(join(dir, `${name}.f32`), floatBytes(tensor))
  }
  const steps = graph.node.map((node): MlpStep => {
    const [, operand, bias] = node.input ?? []
    switch (node.opType) {
      case 'Sub': return { op: 'sub', operand }
      case 'Mul': return { op: 'mul', operand }
      case 'Gemm':
        if ((node.attribute ?? []).length > 0) throw new Error(`${modelPath}: Gemm ${node.name} has attributes`)
        return { op: 'gemm', weight: operand, bias }
      case 'Relu': return { op: 'relu' }
      case 'Softmax': return { op: 'softmax' }
      default: throw new Error(`${modelPath}: operator ${node.opType} is not part of the MLP layout`)
    }
  })
  const mlp: MlpGraph = { input: graph.input[0].name, output: graph.output[0].name, shapes, steps }
  await writeFile(join(dir, 'graph.json'), JSON.stringify(mlp))
  return mlp
}
