import onnxProto from 'onnx-proto'

const { onnx } = onnxProto

export type ElemType = keyof typeof onnx.TensorProto.DataType

/** A tensor's value info: its element type and dims, a string dim being symbolic (`'batch'`). */
export const tensorInfo = (name: string, elemType: ElemType, dims: ReadonlyArray<string | number>): onnxProto.onnx.IValueInfoProto => ({
  name,
  type: { tensorType: { elemType: onnx.TensorProto.DataType[elemType], shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) } } },
})

/** A model of one graph, at the IR version and opset every test model here is written in. */
export const encodeModel = (graph: onnxProto.onnx.IGraphProto): Uint8Array =>
  onnx.ModelProto.encode({ irVersion: 8, opsetImport: [{ domain: '', version: 17 }], producerName: 'edge-infer-tests', graph }).finish()
