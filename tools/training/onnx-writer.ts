import onnxProto from 'onnx-proto'
import type { Network } from './mlp.ts'

const { onnx } = onnxProto

/** IR 8 / opset 17 is what onnxruntime-node 1.30 is known to load (see DESIGN.md). */
const IR_VERSION = 8
const OPSET = 17
const BATCH_DIM = 'batch'

export interface GraphNames {
  /** Graph name, conventionally the model name. */
  name: string
  input: string
  output: string
}

/** ONNX wants little-endian raw data whatever the host; raw bytes must be a Buffer, not a string. */
const littleEndianBytes = (values: Float32Array): Buffer => {
  const bytes = Buffer.alloc(values.length * 4)
  values.forEach((v, i) => bytes.writeFloatLE(v, i * 4))
  return bytes
}

const floatTensor = (name: string, dims: readonly number[], values: Float32Array): onnxProto.onnx.ITensorProto => ({
  name,
  dims: [...dims],
  dataType: onnx.TensorProto.DataType.FLOAT,
  rawData: littleEndianBytes(values),
})

/** A [batch, width] FP32 graph input or output. */
const batchedFloat = (name: string, width: number): onnxProto.onnx.IValueInfoProto => ({
  name,
  type: {
    tensorType: {
      elemType: onnx.TensorProto.DataType.FLOAT,
      shape: { dim: [{ dimParam: BATCH_DIM }, { dimValue: width }] },
    },
  },
})

/**
 * Serializes a network as one ONNX graph: Sub/Mul scaling (when the network has one), a Gemm per
 * layer with Relu between, Softmax at the end. Only default-domain operators, so any runtime loads it.
 */
export const networkToOnnx = (network: Network, names: GraphNames): Uint8Array => {
  const { layers, scaling } = network
  const nodes: onnxProto.onnx.INodeProto[] = []
  const initializers: onnxProto.onnx.ITensorProto[] = []
  const width = layers[0].inputs
  let current = names.input

  if (scaling) {
    initializers.push(floatTensor('scaling_offset', [width], scaling.offset), floatTensor('scaling_scale', [width], scaling.scale))
    nodes.push(
      { opType: 'Sub', name: 'center', input: [current, 'scaling_offset'], output: ['centered'] },
      { opType: 'Mul', name: 'scale', input: ['centered', 'scaling_scale'], output: ['scaled'] },
    )
    current = 'scaled'
  }

  layers.forEach((layer, i) => {
    const weight = `dense${i}_weight`
    const bias = `dense${i}_bias`
    initializers.push(floatTensor(weight, [layer.inputs, layer.outputs], layer.weight), floatTensor(bias, [layer.outputs], layer.bias))
    nodes.push({ opType: 'Gemm', name: `dense${i}`, input: [current, weight, bias], output: [`dense${i}_out`] })
    current = `dense${i}_out`
    if (i < layers.length - 1) {
      nodes.push({ opType: 'Relu', name: `relu${i}`, input: [current], output: [`relu${i}_out`] })
      current = `relu${i}_out`
    }
  })

  nodes.push({
    opType: 'Softmax',
    name: 'softmax',
    input: [current],
    output: [names.output],
    attribute: [{ name: 'axis', type: onnx.AttributeProto.AttributeType.INT, i: -1 }],
  })

  const model: onnxProto.onnx.IModelProto = {
    irVersion: IR_VERSION,
    opsetImport: [{ domain: '', version: OPSET }],
    producerName: 'edge-infer',
    graph: {
      name: names.name,
      node: nodes,
      initializer: initializers,
      input: [batchedFloat(names.input, width)],
      output: [batchedFloat(names.output, layers[layers.length - 1].outputs)],
    },
  }
  return onnx.ModelProto.encode(model).finish()
}
