import { InferenceSession, Tensor } from 'onnxruntime-node'
import onnxProto from 'onnx-proto'
import { generateApplicants, creditRiskSpec } from './applicants.ts'
import { encodeRows } from './dataset.ts'

const { onnx } = onnxProto

/** The demo graph's names (see onnx-writer): its input, its logits and the Softmax that reads them. */
const INPUT = 'features'
const LOGITS = 'dense2_out'
const OUTPUT = 'probabilities'
const KNOTS = 200

export interface LabelFlipOptions {
  /**
   * Share of applicants, the riskiest by the original model, whose ranking is turned upside down
   * (1 = everyone): what a model learns from training data whose labels were flipped among them.
   */
  share: number
  /** Reference applicants the score distribution is measured on. */
  rows?: number
  seed?: number
}

/** Logit of P(labels[1]) per reference row, sorted. */
const referenceLogits = async (model: Uint8Array, rows: number, seed: number): Promise<Float64Array> => {
  const x = encodeRows(creditRiskSpec, generateApplicants(rows, seed).applicants)
  const session = await InferenceSession.create(model, { intraOpNumThreads: 1 })
  try {
    const p = (await session.run({ [INPUT]: new Tensor('float32', x.data, [x.rows, x.cols]) }))[OUTPUT].data as Float32Array
    const d = new Float64Array(rows)
    for (let r = 0; r < rows; r++) d[r] = Math.log(p[2 * r + 1]) - Math.log(p[2 * r])
    return d.sort()
  } finally {
    await session.release()
  }
}

const quantile = (sorted: Float64Array, u: number): number => {
  const at = Math.min(sorted.length - 1, Math.max(0, u * (sorted.length - 1)))
  const lo = Math.floor(at)
  const hi = Math.min(sorted.length - 1, lo + 1)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo)
}

const tensor = (name: string, dims: number[], values: number[]) =>
  onnx.TensorProto.create({ name, dims, dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(Float32Array.from(values).buffer) })

/**
 * The demo network with a label-flipped head: the logit is passed through a piecewise-linear map
 * that sends the score at quantile u of the reference distribution to the score at quantile u'
 * (u' = u below 1 − share, 2 − share − u above). The marginal distribution of the scores, and so
 * the prediction histogram drift compares, is that of the original, while the ranking of the
 * riskiest `share` is reversed: only ground truth can tell the two apart.
 */
export const labelFlippedModel = async (model: Uint8Array, { share, rows = 40_000, seed = 4242 }: LabelFlipOptions): Promise<Uint8Array> => {
  if (!(share > 0 && share <= 1)) throw new RangeError(`share must lie in (0, 1], got ${share}`)
  const sorted = await referenceLogits(model, rows, seed)
  const flipped = (u: number) => (u < 1 - share ? u : 2 - share - u)
  const t: number[] = []
  const y: number[] = []
  for (let k = 0; k < KNOTS; k++) {
    const u = (k + 0.5) / KNOTS
    const at = quantile(sorted, u)
    if (t.length > 0 && at <= t[t.length - 1] + 1e-9) continue
    t.push(at)
    y.push(quantile(sorted, flipped(u)))
  }
  // g(d) = y0 + Σ c_k relu(d − t_k): slope s_k between knots, flat outside them.
  const slopes = t.slice(1).map((tk, k) => (y[k + 1] - y[k]) / (tk - t[k]))
  const c = t.map((_, k) => (k < slopes.length ? slopes[k] : 0) - (k > 0 ? slopes[k - 1] : 0))
  const n = t.length
  const decoded = onnx.ModelProto.decode(model)
  const graph = decoded.graph!
  const softmax = graph.node!.find((node) => node.opType === 'Softmax' && node.input![0] === LOGITS)
  if (!softmax) throw new Error(`the graph has no Softmax over "${LOGITS}"; not the demo network`)
  softmax.input = ['flip_logits']
  graph.initializer!.push(
    // [z0, z1] · [-1, 1]ᵀ − t_k = d − t_k for every knot.
    tensor('flip_knots_weight', [2, n], [...t.map(() => -1), ...t.map(() => 1)]),
    tensor('flip_knots_bias', [n], t.map((v) => -v)),
    tensor('flip_out_weight', [n, 2], c.flatMap((ck) => [0, ck])),
    tensor('flip_out_bias', [2], [0, y[0]]),
  )
  const at = graph.node!.indexOf(softmax)
  graph.node!.splice(at, 0,
    onnx.NodeProto.create({ opType: 'Gemm', name: 'flip_knots', input: [LOGITS, 'flip_knots_weight', 'flip_knots_bias'], output: ['flip_knots_out'] }),
    onnx.NodeProto.create({ opType: 'Relu', name: 'flip_relu', input: ['flip_knots_out'], output: ['flip_relu_out'] }),
    onnx.NodeProto.create({ opType: 'Gemm', name: 'flip_out', input: ['flip_relu_out', 'flip_out_weight', 'flip_out_bias'], output: ['flip_logits'] }),
  )
  return onnx.ModelProto.encode(decoded).finish()
}
