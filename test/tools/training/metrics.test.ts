import { describe, expect, it } from 'vitest'
import { binaryMetrics, constantMetrics, positiveRate, rocAuc } from '../../../tools/training/metrics.ts'

describe('rocAuc', () => {
  it('is 1 for a perfect ranking, 0 for a reversed one and 0.5 for a constant', () => {
    const labels = [0, 0, 1, 1]
    expect(rocAuc([0.1, 0.2, 0.8, 0.9], labels)).toBe(1)
    expect(rocAuc([0.9, 0.8, 0.2, 0.1], labels)).toBe(0)
    expect(rocAuc([0.3, 0.3, 0.3, 0.3], labels)).toBe(0.5)
  })
  it('counts ties between a positive and a negative as half', () => {
    // Pairs (pos, neg): (0.5,0.1) win, (0.5,0.5) tie, (0.9,0.1) win, (0.9,0.5) win → 3.5 / 4.
    expect(rocAuc([0.1, 0.5, 0.5, 0.9], [0, 0, 1, 1])).toBe(0.875)
  })
  it('refuses a single-class sample', () => {
    expect(() => rocAuc([0.1, 0.2], [1, 1])).toThrow(/both classes/)
  })
})

describe('binaryMetrics', () => {
  it('scores accuracy at the threshold (inclusive) and mean log loss', () => {
    const m = binaryMetrics([0.5, 0.2, 0.9, 0.4], [1, 0, 0, 1])
    expect(m.rows).toBe(4)
    expect(m.accuracy).toBe(0.5)
    expect(m.log_loss).toBeCloseTo(-(Math.log(0.5) + Math.log(0.8) + Math.log(0.1) + Math.log(0.4)) / 4, 12)
  })
  it('keeps the log loss finite for a confident mistake', () => {
    expect(Number.isFinite(binaryMetrics([0, 1], [1, 0]).log_loss)).toBe(true)
  })
})

describe('constantMetrics', () => {
  it('predicts the base rate: majority-class accuracy, AUC 0.5', () => {
    const labels = [1, 0, 0, 0]
    expect(positiveRate(labels)).toBe(0.25)
    const m = constantMetrics(0.25, labels)
    expect(m).toMatchObject({ rows: 4, accuracy: 0.75, auc: 0.5 })
    expect(m.log_loss).toBeCloseTo(-(Math.log(0.25) + 3 * Math.log(0.75)) / 4, 12)
  })
})
