import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { binIndex } from '../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, binnedQuality, qualityFigures, rowLogLoss, type QualityBin } from '../../shared/quality.ts'
import { createRandom } from '../../tools/training/random.ts'

/** The baseline's prediction bins: 20 bins of 0.05. */
const EDGES = PREDICTION_EDGES

interface Stream {
  bins: QualityBin[]
  sums: number[]
  logLossSum: number
  scores: number[]
  labels: boolean[]
}

/** Rows scored `score()` and labelled positive with probability `truth(score)`, binned as the edge bins them. */
const stream = (seed: number, rows: number, score: (u: number) => number, truth: (p: number) => number): Stream => {
  const random = createRandom(seed)
  const out: Stream = { bins: EDGES.map(() => ({ rows: 0, positives: 0 })).concat({ rows: 0, positives: 0 }), sums: new Array(20).fill(0), logLossSum: 0, scores: [], labels: [] }
  for (let r = 0; r < rows; r++) {
    const p = score(random.next())
    const positive = random.bernoulli(truth(p))
    const bin = out.bins[binIndex(EDGES, p)]
    bin.rows++
    if (positive) bin.positives++
    out.sums[binIndex(EDGES, p)] += p
    out.logLossSum += rowLogLoss(p, positive)
    out.scores.push(p)
    out.labels.push(positive)
  }
  return out
}

/** Mann-Whitney AUC over the raw scores, ties one half: what the binned AUC approximates. */
const exactAuc = (scores: number[], labels: boolean[]): number => {
  const order = scores.map((s, i) => [s, labels[i]] as const).sort((a, b) => a[0] - b[0])
  let negatives = 0
  let ranked = 0
  let positives = 0
  for (const [, positive] of order) {
    if (positive) {
      ranked += negatives
      positives++
    } else negatives++
  }
  return ranked / (positives * negatives)
}

describe('binnedQuality', () => {
  it('computes every figure of a small hand-checked table', () => {
    // Two bins split at 0.5: 4 rows below (1 positive), 6 above (4 positive).
    const bins = [
      { rows: 4, positives: 1 },
      { rows: 6, positives: 4 },
    ]
    const figures = binnedQuality([0.5], undefined, bins, { meanProbability: [0.25, 0.75], logLossSum: 5 })
    expect(figures.labels).toBe(10)
    expect(figures.accuracy).toBeCloseTo((3 + 4) / 10, 12)
    // Positives above rank over the 3 negatives below (4·3) plus half the ties (4·2/2); the one below ties with 3 (1·3/2).
    expect(figures.roc_auc).toBeCloseTo((4 * 3 + (4 * 2) / 2 + (1 * 3) / 2) / (5 * 5), 12)
    expect(figures.log_loss).toBeCloseTo(0.5, 12)
    expect(figures.ece).toBeCloseTo((4 * Math.abs(0.25 - 0.25) + 6 * Math.abs(0.75 - 4 / 6)) / 10, 12)
    expect(qualityFigures.parse(figures)).toEqual(figures)
  })

  it('gives the accuracy of a synthetic stream with known accuracy within its sampling error', () => {
    // Calibrated scores uniform on [0, 1]: a row is right with probability max(p, 1 − p), so accuracy is 3/4 and AUC 5/6.
    const rows = 40_000
    const s = stream(7, rows, (u) => u, (p) => p)
    const figures = binnedQuality(EDGES, 0.5, s.bins, { logLossSum: s.logLossSum, meanProbability: s.sums.map((sum, i) => sum / s.bins[i].rows) })
    const sigma = Math.sqrt((0.75 * 0.25) / rows)
    expect(Math.abs(figures.accuracy! - 0.75)).toBeLessThan(3 * sigma)
    // Binned AUC loses only the order inside a bin, so it stays near the raw samples' AUC and the population's 5/6.
    expect(Math.abs(figures.roc_auc! - exactAuc(s.scores, s.labels))).toBeLessThan(0.01)
    expect(Math.abs(figures.roc_auc! - 5 / 6)).toBeLessThan(0.015)
    // E[−ln max-likelihood] for calibrated uniform scores is 1/2.
    expect(Math.abs(figures.log_loss! - 0.5)).toBeLessThan(0.02)
    expect(figures.ece!).toBeLessThan(0.02)
  })

  it('sees a label-flipped model: accuracy and AUC fall below chance and ECE grows, from the same scores', () => {
    const s = stream(11, 20_000, (u) => u, (p) => 1 - p)
    const figures = binnedQuality(EDGES, 0.5, s.bins, { logLossSum: s.logLossSum })
    expect(figures.accuracy!).toBeLessThan(0.27)
    expect(figures.roc_auc!).toBeLessThan(0.2)
    expect(figures.log_loss!).toBeGreaterThan(1.4)
    expect(figures.ece!).toBeGreaterThan(0.45)
  })

  it('classifies by the threshold, which must sit on an edge', () => {
    const bins = EDGES.map(() => ({ rows: 0, positives: 0 })).concat({ rows: 0, positives: 0 })
    bins[binIndex(EDGES, 0.32)] = { rows: 10, positives: 10 }
    expect(binnedQuality(EDGES, 0.5, bins).accuracy).toBe(0)
    expect(binnedQuality(EDGES, 0.3, bins).accuracy).toBe(1)
    expect(binnedQuality(EDGES, 0.35, bins).accuracy).toBe(0)
    expect(() => binnedQuality(EDGES, 0.33, bins)).toThrow(/not a prediction bin edge/)
  })

  it('gives the label-free estimate (positives = rows × calibrated q) near the realized figures of the same stream', () => {
    // The calibration: a reference stream's positive share per bin; the live window then contributes only its bin counts.
    const truth = (p: number): number => Math.min(1, p * 1.2)
    const reference = stream(3, 40_000, (u) => u * u, truth)
    const live = stream(5, 10_000, (u) => u ** 1.5, truth)
    const q = reference.bins.map((b) => b.positives / b.rows)
    const meanProbability = live.sums.map((sum, i) => sum / live.bins[i].rows)
    const estimated = binnedQuality(EDGES, 0.5, live.bins.map((b, i) => ({ rows: b.rows, positives: b.rows * q[i] })), { meanProbability })
    const realized = binnedQuality(EDGES, 0.5, live.bins, { logLossSum: live.logLossSum })
    expect(estimated.labels).toBe(realized.labels)
    expect(Math.abs(estimated.accuracy! - realized.accuracy!)).toBeLessThan(0.015)
    expect(Math.abs(estimated.roc_auc! - realized.roc_auc!)).toBeLessThan(0.015)
    expect(Math.abs(estimated.log_loss! - realized.log_loss!)).toBeLessThan(0.03)
  })

  it('says null where the rows cannot say, and refuses counts that do not fit the bins', () => {
    expect(binnedQuality([0.5], undefined, [{ rows: 0, positives: 0 }, { rows: 0, positives: 0 }])).toEqual({
      labels: 0, accuracy: null, roc_auc: null, log_loss: null, ece: null,
    })
    const oneClass = binnedQuality([0.5], undefined, [{ rows: 3, positives: 0 }, { rows: 2, positives: 0 }])
    expect(oneClass.accuracy).toBeCloseTo(3 / 5, 12)
    expect(oneClass.roc_auc).toBeNull()
    expect(oneClass.log_loss).toBeNull()
    expect(() => binnedQuality([0.5], undefined, [{ rows: 1, positives: 0 }])).toThrow(RangeError)
    expect(() => binnedQuality([0.5], undefined, [{ rows: 1, positives: 2 }, { rows: 0, positives: 0 }])).toThrow(RangeError)
    expect(() => binnedQuality([0.5], undefined, [{ rows: 1, positives: 0 }, { rows: 0, positives: 0 }], { meanProbability: [0.1] })).toThrow(RangeError)
  })

  it('bins as the baselines do', async () => {
    const baseline = JSON.parse(await readFile(new URL('../../models/credit-risk/2/baseline.json', import.meta.url), 'utf8')) as { prediction: { edges: number[] } }
    expect(PREDICTION_EDGES).toEqual(baseline.prediction.edges)
  })

  it('bins a score on an edge into the upper bin and clips log loss', () => {
    expect(binIndex(EDGES, 0)).toBe(0)
    expect(binIndex(EDGES, 0.05)).toBe(1)
    expect(binIndex(EDGES, 0.5)).toBe(10)
    expect(binIndex(EDGES, 1)).toBe(19)
    expect(rowLogLoss(0, true)).toBeCloseTo(-Math.log(1e-15), 9)
    expect(rowLogLoss(0.8, false)).toBeCloseTo(-Math.log(0.2), 12)
  })
})
