import onnxProto from 'onnx-proto'
import type { Datatype } from '../../shared/datatypes.ts'

const { onnx } = onnxProto
const T = onnx.TensorProto.DataType

/** ONNX element types the backend can serve, as Open Inference Protocol datatypes. */
const DATATYPE_OF: ReadonlyMap<number, Datatype> = new Map([
  [T.FLOAT, 'FP32'], [T.DOUBLE, 'FP64'], [T.FLOAT16, 'FP16'],
  [T.UINT8, 'UINT8'], [T.UINT16, 'UINT16'], [T.UINT32, 'UINT32'], [T.UINT64, 'UINT64'],
  [T.INT8, 'INT8'], [T.INT16, 'INT16'], [T.INT32, 'INT32'], [T.INT64, 'INT64'],
  [T.BOOL, 'BOOL'], [T.STRING, 'BYTES'],
])

/** One graph input or output: its full shape, -1 where a dimension is symbolic or unknown. */
export interface GraphTensor {
  name: string
  datatype: Datatype
  shape: number[]
}

export interface GraphSignature {
  inputs: GraphTensor[]
  outputs: GraphTensor[]
}

const tensorOf = (value: onnxProto.onnx.IValueInfoProto, role: string): GraphTensor => {
  const name = value.name ?? ''
  const tensor = value.type?.tensorType
  if (!tensor) throw new Error(`${role} "${name}" is not a tensor (sequences and maps are not served; skl2onnx: pass options={"zipmap": False})`)
  const datatype = DATATYPE_OF.get(tensor.elemType ?? 0)
  if (!datatype) throw new Error(`${role} "${name}" has ONNX element type ${tensor.elemType}, which the backend does not serve`)
  const shape = (tensor.shape?.dim ?? []).map((d) => {
    const value = d.dimValue === undefined || d.dimValue === null ? undefined : Number(d.dimValue)
    return value !== undefined && value > 0 ? value : -1
  })
  return { name, datatype, shape }
}

/** The graph's inputs (initializers excluded: older exporters list weights as inputs) and outputs. */
export const readSignature = (bytes: Uint8Array): GraphSignature => {
  let model: onnxProto.onnx.ModelProto
  try {
    model = onnx.ModelProto.decode(bytes)
  } catch (err) {
    throw new Error(`not an ONNX model: ${(err as Error).message}`)
  }
  const graph = model.graph
  if (!graph) throw new Error('not an ONNX model: it has no graph')
  const weights = new Set((graph.initializer ?? []).map((t) => t.name))
  const inputs = (graph.input ?? []).filter((i) => !weights.has(i.name)).map((i) => tensorOf(i, 'input'))
  const outputs = (graph.output ?? []).map((o) => tensorOf(o, 'output'))
  if (inputs.length === 0 || outputs.length === 0) throw new Error('the graph declares no inputs or no outputs')
  return { inputs, outputs }
}
