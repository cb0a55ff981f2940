import { describe, expect, it } from 'vitest'
import { estimatedQuality } from '../../../../backend/monitor/drift/report.ts'
import type { ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { binIndex } from '../../../../shared/drift/statistics.ts'
import { PREDICTION_EDGES, type QualityBin } from '../../../../shared/quality.ts'
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

/** Rows and label-positive rows per bin, Σ s per bin and the rows themselves, of `n` draws with score `score()`. */
const stream = (n: number, seed: number, score: (u: number) => number) => {
  const random = createRandom(seed)
  const counts: QualityBin[] = Array.from({ length: bins }, () => ({ rows: 0, positives: 0 }))
  const totals = new Array<number>(bins).fill(0)
  const rows: Array<{ s: number; positive: boolean }> = []
  for (let r = 0; r < n; r++) {
    const s = score(random.next())
    const bin = binIndex(edges, s)
    const positive = random.next() < s * s
    counts[bin].rows++
    totals[bin] += s
    if (positive) counts[bin].positives++
    rows.push({ s, positive })
  }
  return { counts, rows, meanProbability: totals.map((t, i) => t / counts[i].rows) }
}

/**
 * The realized figures of a window's labelled rows, from their definitions (not the code under
 * test): accuracy at s ≥ 0.5; AUC with the bins as the ranking (a pair in one bin counts half);
 * log loss of each row's own score; ECE as Σ |rows × mean score − positives| / n per bin.
 */
const realizedOf = ({ counts, rows, meanProbability }: ReturnType<typeof stream>) => {
  const n = rows.length
  let pairs = 0
  let ranked = 0
  for (let i = 0; i < bins; i++) {
    for (let j = 0; j < bins; j++) {
      const both = counts[i].positives * (counts[j].rows - counts[j].positives)
      pairs += both
      if (i > j) ranked += both
      else if (i === j) ranked += both / 2
    }
  }
  return {
    accuracy: rows.filter(({ s, positive }) => (s >= 0.5) === positive).length / n,
    roc_auc: ranked / pairs,
    log_loss: -rows.reduce((sum, { s, positive }) => sum + Math.log(positive ? s : 1 - s), 0) / n,
    ece: counts.reduce((sum, { rows: r, positives }, i) => sum + (r === 0 ? 0 : Math.abs(r * meanProbability[i] - positives)), 0) / n,
  }
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
  const realized = realizedOf(live)
  const estimated = estimatedQuality(prediction, 0.5, live.counts.map((b) => b.rows))

  it('matches the realized accuracy, AUC and log loss of the shifted window within their sampling error', () => {
    expect(estimated.labels).toBe(20_000)
    const accuracySe = Math.sqrt((realized.accuracy * (1 - realized.accuracy)) / 20_000)
    expect(Math.abs(estimated.accuracy! - realized.accuracy)).toBeLessThan(4 * accuracySe)
    expect(Math.abs(estimated.roc_auc! - realized.roc_auc)).toBeLessThan(0.01)
    expect(Math.abs(estimated.log_loss! - realized.log_loss)).toBeLessThan(0.01)
    expect(Math.abs(estimated.ece! - realized.ece)).toBeLessThan(0.01)
  })

  it('is not what the scores themselves would say: the calibration is what carries the estimate', () => {
    // Trusting the scores: a bin's rows are positive at its mean score, and classed by s ≥ 0.5.
    const naiveCorrect = live.counts.reduce((sum, { rows }, i) => sum + rows * (i > 0 && edges[i - 1]! >= 0.5 ? live.meanProbability[i] : 1 - live.meanProbability[i]), 0)
    const naiveAccuracy = naiveCorrect / 20_000
    expect(Math.abs(naiveAccuracy - realized.accuracy)).toBeGreaterThan(0.05)
    expect(Math.abs(naiveAccuracy - estimated.accuracy!)).toBeGreaterThan(0.05)
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
