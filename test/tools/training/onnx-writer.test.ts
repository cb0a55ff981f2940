import onnxProto from 'onnx-proto'
import { InferenceSession, Tensor } from 'onnxruntime-node'
import { describe, expect, it } from 'vitest'
import type { Matrix } from '../../../tools/training/dataset.ts'
import { initLayers, predict, type Network } from '../../../tools/training/mlp.ts'
import { networkToOnnx } from '../../../tools/training/onnx-writer.ts'
import { createRandom } from '../../../tools/training/random.ts'

const { onnx } = onnxProto
const names = { name: 'toy', input: 'features', output: 'probabilities' }

const toy = (withScaling: boolean): Network => {
  const random = createRandom(5)
  const layers = initLayers([6, 10, 4, 3], random)
  for (const l of layers) l.bias.forEach((_, i) => (l.bias[i] = random.normal(0, 0.5)))
  if (!withScaling) return { layers }
  return {
    layers,
    scaling: {
      offset: Float32Array.from([1000, -3, 0, 0.5, 40_000, 0]),
      scale: Float32Array.from([0.01, 2, 1, 1, 1 / 25_000, 1]),
    },
  }
}

const input = (rows: number): Matrix => {
  const random = createRandom(6)
  const scales = [100, 1, 1, 1, 30_000, 1]
  const data = Float32Array.from({ length: rows * 6 }, (_, i) => random.normal(0, scales[i % 6]) + (i % 6 === 0 ? 1000 : 0))
  return { rows, cols: 6, data }
}

describe('networkToOnnx', () => {
  for (const withScaling of [true, false]) {
    it(`computes what the TypeScript forward pass computes (${withScaling ? 'with' : 'without'} scaling)`, async () => {
      const network = toy(withScaling)
      const x = input(50)
      const session = await InferenceSession.create(networkToOnnx(network, names))
      try {
        const out = await session.run({ features: new Tensor('float32', x.data, [x.rows, x.cols]) })
        expect(out.probabilities.dims).toEqual([50, 3])
        const expected = predict(network, x)
        const actual = out.probabilities.data as Float32Array
        let worst = 0
        for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(actual[i] - expected[i]))
        expect(worst).toBeLessThan(1e-5)
        // Not a degenerate network: the classes actually vary.
        expect(Math.max(...expected) - Math.min(...expected)).toBeGreaterThan(0.3)
      } finally {
        await session.release()
      }
    })
  }

  it('writes IR 8, default-domain opset 17 and a symbolic batch dimension', () => {
    const model = onnx.ModelProto.decode(networkToOnnx(toy(true), names))
    expect(Number(model.irVersion)).toBe(8)
    expect(model.opsetImport.map((o) => [o.domain, Number(o.version)])).toEqual([['', 17]])
    const graph = model.graph!
    expect(graph.node!.map((n) => n.opType)).toEqual(['Sub', 'Mul', 'Gemm', 'Relu', 'Gemm', 'Relu', 'Gemm', 'Softmax'])
    for (const value of [graph.input![0], graph.output![0]]) {
      expect(value.type!.tensorType!.shape!.dim!.map((d) => d.dimParam || Number(d.dimValue))).toEqual(['batch', value === graph.input![0] ? 6 : 3])
    }
    expect(graph.initializer!.every((t) => t.rawData instanceof Uint8Array && t.rawData.length === 4 * t.dims!.reduce((a, b) => a * Number(b), 1))).toBe(true)
  })
})
