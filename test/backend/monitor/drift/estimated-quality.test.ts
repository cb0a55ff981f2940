import { describe, expect, it } from 'vitest'
import { estimatedQuality } from '../../../../backend/monitor/drift/report.ts'
import type { ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { binIndex } from '../../../../shared/drift/statistics.ts'
import { binnedQuality, PREDICTION_EDGES, rowLogLoss, type QualityBin } from '../../../../shared/quality.ts'
import { createRandom } from '../../../../tools/training/random.ts'
import { effectLevels, psiLevels } from './psi-levels.ts'

/**
 * CBPE against the truth: a model whose score s is miscalibrated (the label is 1 with probability
 * s², not s), so a bin's calibrated share is far from its scores. The baseline's calibration
 * comes from a reference stream with s uniform; the live window is shifted towards high scores
 * (covariate shift: same s → label relation). Its estimate must match the realized figures of the
 * same window's labels within their sampling error; one that trusted the scores would not.
 */

const edges = [...PREDICTION_EDGES]
const bins = edges.length + 1

/** Rows and label-positive rows per bin, Σ s per bin and the rows' exact log loss, of `n` draws with score `score()`. */
const stream = (n: number, seed: number, score: (u: number) => number) => {
  const random = createRandom(seed)
  const counts: QualityBin[] = Array.from({ length: bins }, () => ({ rows: 0, positives: 0 }))
  const totals = new Array<number>(bins).fill(0)
  let logLossSum = 0
  for (let r = 0; r < n; r++) {
    const s = score(random.next())
    const bin = binIndex(edges, s)
    const positive = random.next() < s * s
    counts[bin].rows++
    totals[bin] += s
    if (positive) counts[bin].positives++
    logLossSum += rowLogLoss(s, positive)
  }
  return { counts, logLossSum, meanProbability: totals.map((t, i) => t / counts[i].rows) }
}

const reference = stream(200_000, 1, (u) => u)
const prediction: ReportBaseline['prediction'] = {
  edges,
  counts: reference.counts.map((b) => b.rows),
  class_counts: {},
  thresholds: psiLevels(0.1, 0.2),
  effect_size: { mean: 0, sd: 1, thresholds: effectLevels },
  calibration: { positives: reference.counts.map((b) => b.positives), mean_probability: reference.meanProbability },
}

describe('estimatedQuality (CBPE)', () => {
  const live = stream(20_000, 2, (u) => Math.sqrt(u))
  const realized = binnedQuality(edges, 0.5, live.counts, { meanProbability: live.meanProbability, logLossSum: live.logLossSum })
  const estimated = estimatedQuality(prediction, 0.5, live.counts.map((b) => b.rows))

  it('matches the realized accuracy, AUC and log loss of the shifted window within their sampling error', () => {
    expect(estimated.labels).toBe(20_000)
    const accuracySe = Math.sqrt((realized.accuracy! * (1 - realized.accuracy!)) / 20_000)
    expect(Math.abs(estimated.accuracy! - realized.accuracy!)).toBeLessThan(4 * accuracySe)
    expect(Math.abs(estimated.roc_auc! - realized.roc_auc!)).toBeLessThan(0.01)
    expect(Math.abs(estimated.log_loss! - realized.log_loss!)).toBeLessThan(0.01)
    expect(Math.abs(estimated.ece! - realized.ece!)).toBeLessThan(0.01)
  })

  it('is not what the scores themselves would say: the calibration is what carries the estimate', () => {
    const naive = binnedQuality(edges, 0.5, live.counts.map((b, i) => ({ rows: b.rows, positives: b.rows * live.meanProbability[i] })))
    expect(Math.abs(naive.accuracy! - realized.accuracy!)).toBeGreaterThan(0.05)
    expect(Math.abs(naive.accuracy! - estimated.accuracy!)).toBeGreaterThan(0.05)
  })

  it('takes the mean score as the label share of a bin the reference never reached, and is all null for an empty window', () => {
    const sparse = { ...prediction, counts: prediction.counts.map((c, i) => (i === 0 ? 0 : c)), calibration: { ...prediction.calibration, positives: prediction.calibration.positives.map((p, i) => (i === 0 ? 0 : p)) } }
    const only = new Array<number>(bins).fill(0)
    only[0] = 100
    // All 100 rows in bin 0, whose mean score 0.025 stands in for the missing calibration: 2.5 positives, all classed negative.
    expect(estimatedQuality(sparse, 0.5, only).accuracy).toBeCloseTo(1 - prediction.calibration.mean_probability[0], 12)
    expect(estimatedQuality(prediction, 0.5, new Array<number>(bins).fill(0))).toEqual({ labels: 0, accuracy: null, roc_auc: null, log_loss: null, ece: null })
  })
})
