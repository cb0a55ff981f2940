import { describe, expect, it } from 'vitest'
import { predict, train } from '../../../tools/training/mlp.ts'
import { createRandom } from '../../../tools/training/random.ts'

describe('train', () => {
  it('learns XOR-like quadrants, which no linear model can', () => {
    const random = createRandom(1)
    const rows = 800
    const data = new Float32Array(rows * 2)
    const labels = new Uint8Array(rows)
    for (let i = 0; i < rows; i++) {
      const a = random.next() * 2 - 1
      const b = random.next() * 2 - 1
      data[2 * i] = a
      data[2 * i + 1] = b
      labels[i] = a * b > 0 ? 1 : 0
    }
    const x = { rows, cols: 2, data }
    const layers = train(x, labels, { sizes: [2, 16, 8, 2], epochs: 60, batchSize: 32, learningRate: 0.01, weightDecay: 0 }, createRandom(2))
    const p = predict({ layers }, x)
    let correct = 0
    for (let i = 0; i < rows; i++) if ((p[2 * i + 1] >= 0.5 ? 1 : 0) === labels[i]) correct++
    expect(correct / rows).toBeGreaterThan(0.95)
  })

  it('is deterministic for a seed', () => {
    const x = { rows: 3, cols: 2, data: Float32Array.from([0, 1, 1, 0, 1, 1]) }
    const labels = Uint8Array.from([1, 1, 0])
    const options = { sizes: [2, 4, 2], epochs: 3, batchSize: 2, learningRate: 0.01, weightDecay: 0.1 }
    const [a, b] = [train(x, labels, options, createRandom(7)), train(x, labels, options, createRandom(7))]
    expect(a).toEqual(b)
  })

  it('refuses data narrower or wider than the first layer', () => {
    const x = { rows: 1, cols: 3, data: new Float32Array(3) }
    expect(() => train(x, new Uint8Array(1), { sizes: [2, 2], epochs: 1, batchSize: 1, learningRate: 0.1, weightDecay: 0 }, createRandom(1))).toThrow(/3 columns/)
  })
})
