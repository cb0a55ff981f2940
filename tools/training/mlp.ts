import { applyScaling, type Matrix, type Scaling } from './dataset.ts'
import type { Random } from './random.ts'

/** A fully connected layer; `weight` is inputs×outputs row-major, the layout of Gemm's B. */
export interface Dense {
  inputs: number
  outputs: number
  weight: Float32Array
  bias: Float32Array
}

/** Optional input scaling, then dense layers with ReLU between them and softmax after the last. */
export interface Network {
  scaling?: Scaling
  layers: readonly Dense[]
}

export interface TrainOptions {
  /** Layer widths from input to output, e.g. [23, 32, 16, 2]. */
  sizes: readonly number[]
  epochs: number
  batchSize: number
  learningRate: number
  /** Decoupled (AdamW) decay of the weights, not the biases, per unit of learning rate. */
  weightDecay: number
}

/** He-normal weights suit ReLU layers: activations keep their scale with depth. */
export const initLayers = (sizes: readonly number[], random: Random): Dense[] =>
  sizes.slice(1).map((outputs, i) => {
    const inputs = sizes[i]
    const sd = Math.sqrt(2 / inputs)
    const weight = new Float32Array(inputs * outputs)
    for (let k = 0; k < weight.length; k++) weight[k] = random.normal(0, sd)
    return { inputs, outputs, weight, bias: new Float32Array(outputs) }
  })

const softmaxInPlace = (z: Float64Array): void => {
  let max = -Infinity
  for (let j = 0; j < z.length; j++) max = Math.max(max, z[j])
  let sum = 0
  for (let j = 0; j < z.length; j++) sum += z[j] = Math.exp(z[j] - max)
  for (let j = 0; j < z.length; j++) z[j] /= sum
}

/** out = relu?(input · W + b); weights may be the FP32 model or the FP64 training copy. */
const denseForward = (
  input: ArrayLike<number>, weight: ArrayLike<number>, bias: ArrayLike<number>, out: Float64Array, relu: boolean,
): void => {
  const outputs = out.length
  for (let j = 0; j < outputs; j++) out[j] = bias[j]
  for (let i = 0; i < input.length; i++) {
    const v = input[i]
    if (v === 0) continue
    const row = i * outputs
    for (let j = 0; j < outputs; j++) out[j] += v * weight[row + j]
  }
  if (relu) for (let j = 0; j < outputs; j++) out[j] = Math.max(0, out[j])
}

/** Class probabilities, rows×classes, the reference the ONNX graph is checked against. */
export const predict = (network: Network, x: Matrix): Float64Array => {
  const input = network.scaling ? applyScaling(network.scaling, x) : x
  const { layers } = network
  const classes = layers[layers.length - 1].outputs
  const activations = layers.map((l) => new Float64Array(l.outputs))
  const probabilities = new Float64Array(x.rows * classes)
  for (let r = 0; r < x.rows; r++) {
    let a: ArrayLike<number> = input.data.subarray(r * x.cols, (r + 1) * x.cols)
    layers.forEach((layer, l) => {
      denseForward(a, layer.weight, layer.bias, activations[l], l < layers.length - 1)
      a = activations[l]
    })
    const out = activations[layers.length - 1]
    softmaxInPlace(out)
    probabilities.set(out, r * classes)
  }
  return probabilities
}

/** Adam state for one parameter tensor; training runs in FP64 and is rounded to FP32 at the end. */
interface Param {
  value: Float64Array
  grad: Float64Array
  m: Float64Array
  v: Float64Array
}

const param = (initial: Float32Array): Param => ({
  value: Float64Array.from(initial),
  grad: new Float64Array(initial.length),
  m: new Float64Array(initial.length),
  v: new Float64Array(initial.length),
})

const BETA1 = 0.9
const BETA2 = 0.999
const ADAM_EPSILON = 1e-8

/**
 * Mini-batch Adam on softmax cross-entropy, learning rate on a cosine schedule down to zero so
 * the last epochs settle into a minimum instead of bouncing around it. `x` is already scaled.
 */
export const train = (x: Matrix, labels: Uint8Array, options: TrainOptions, random: Random): Dense[] => {
  const { sizes, epochs, batchSize, learningRate, weightDecay } = options
  if (sizes[0] !== x.cols) throw new Error(`first layer takes ${sizes[0]} inputs, data has ${x.cols} columns`)
  const init = initLayers(sizes, random)
  const weights = init.map((l) => param(l.weight))
  const biases = init.map((l) => param(l.bias))
  const depth = init.length
  const activations = init.map((l) => new Float64Array(l.outputs))
  const deltas = init.map((l) => new Float64Array(l.outputs))
  const order = Uint32Array.from({ length: x.rows }, (_, i) => i)
  const totalSteps = epochs * Math.ceil(x.rows / batchSize)
  let step = 0

  const accumulate = (row: number): void => {
    const input = x.data.subarray(row * x.cols, (row + 1) * x.cols)
    let a: ArrayLike<number> = input
    for (let l = 0; l < depth; l++) {
      denseForward(a, weights[l].value, biases[l].value, activations[l], l < depth - 1)
      a = activations[l]
    }
    const top = deltas[depth - 1]
    top.set(activations[depth - 1])
    softmaxInPlace(top)
    top[labels[row]] -= 1
    for (let l = depth - 1; l >= 0; l--) {
      const delta = deltas[l]
      const below = l === 0 ? input : activations[l - 1]
      const outputs = delta.length
      const w = weights[l]
      const b = biases[l]
      for (let j = 0; j < outputs; j++) b.grad[j] += delta[j]
      for (let i = 0; i < below.length; i++) {
        const v = below[i]
        if (v === 0) continue
        const rowAt = i * outputs
        for (let j = 0; j < outputs; j++) w.grad[rowAt + j] += v * delta[j]
      }
      if (l === 0) break
      // Back through W, then through the ReLU below (zero where it was inactive).
      const next = deltas[l - 1]
      for (let i = 0; i < next.length; i++) {
        if (below[i] <= 0) {
          next[i] = 0
          continue
        }
        let sum = 0
        const rowAt = i * outputs
        for (let j = 0; j < outputs; j++) sum += w.value[rowAt + j] * delta[j]
        next[i] = sum
      }
    }
  }

  const update = (p: Param, scale: number, rate: number, decay: number, correction1: number, correction2: number): void => {
    for (let k = 0; k < p.value.length; k++) {
      p.value[k] -= rate * decay * p.value[k]
      const g = p.grad[k] * scale
      p.m[k] = BETA1 * p.m[k] + (1 - BETA1) * g
      p.v[k] = BETA2 * p.v[k] + (1 - BETA2) * g * g
      p.value[k] -= (rate * (p.m[k] / correction1)) / (Math.sqrt(p.v[k] / correction2) + ADAM_EPSILON)
      p.grad[k] = 0
    }
  }

  for (let epoch = 0; epoch < epochs; epoch++) {
    random.shuffle(order)
    for (let start = 0; start < x.rows; start += batchSize) {
      const end = Math.min(x.rows, start + batchSize)
      for (let k = start; k < end; k++) accumulate(order[k])
      step++
      const rate = learningRate * 0.5 * (1 + Math.cos((Math.PI * (step - 1)) / totalSteps))
      const correction1 = 1 - BETA1 ** step
      const correction2 = 1 - BETA2 ** step
      for (const w of weights) update(w, 1 / (end - start), rate, weightDecay, correction1, correction2)
      for (const b of biases) update(b, 1 / (end - start), rate, 0, correction1, correction2)
    }
  }

  return init.map((l, i) => ({
    inputs: l.inputs,
    outputs: l.outputs,
    weight: Float32Array.from(weights[i].value),
    bias: Float32Array.from(biases[i].value),
  }))
}
