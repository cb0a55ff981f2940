import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import onnxProto from 'onnx-proto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { exportMlpGraph } from '../../../../../load/bench/backend/peers/mlp-graph.ts'
import { ROOT } from '../../../../../load/harness/servers.ts'

const { onnx } = onnxProto
const CREDIT_RISK = join(ROOT, 'models/credit-risk/2/model.onnx')

describe('exportMlpGraph', () => {
  let dir = ''
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mlp-graph-test-'))
  })
  afterEach(() => rm(dir, { recursive: true, force: true }))

  it('writes the graph\'s steps in order and each weight tensor as its FP32 bytes', async () => {
    const graph = await exportMlpGraph(CREDIT_RISK, dir)
    expect(graph.steps.map((s) => s.op)).toEqual(['sub', 'mul', 'gemm', 'relu', 'gemm', 'relu', 'gemm', 'softmax'])
    expect(graph.steps[2]).toEqual({ op: 'gemm', weight: 'dense0_weight', bias: 'dense0_bias' })
    expect(graph.shapes.dense0_weight).toEqual([23, 32])
    expect(JSON.parse(await readFile(join(dir, 'graph.json'), 'utf8'))).toEqual(graph)
    for (const [name, shape] of Object.entries(graph.shapes)) expect((await stat(join(dir, `${name}.f32`))).size).toBe(4 * shape.reduce((a, b) => a * b, 1))
  })

  it('refuses a graph the numpy copy would answer differently: another operator, or a Gemm with attributes', async () => {
    const model = onnx.ModelProto.decode(await readFile(CREDIT_RISK))
    const rewrite = async (edit: (nodes: onnxProto.onnx.INodeProto[]) => void) => {
      const copy = onnx.ModelProto.decode(onnx.ModelProto.encode(model).finish())
      edit(copy.graph!.node!)
      const path = join(dir, 'edited.onnx')
      await writeFile(path, onnx.ModelProto.encode(copy).finish())
      return exportMlpGraph(path, join(dir, 'out'))
    }
    await expect(rewrite((nodes) => (nodes[3].opType = 'Tanh'))).rejects.toThrow(/operator Tanh/)
    await expect(rewrite((nodes) => nodes[2].attribute!.push({ name: 'transB', type: onnx.AttributeProto.AttributeType.INT, i: 1 }))).rejects.toThrow(/has attributes/)
  })
})
