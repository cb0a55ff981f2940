import * as z from 'zod'

/**
 * Classification quality from binned counts, the same arithmetic for realized quality (the edge's
 * labelled rows per prediction bin) and for the label-free estimate (CBPE: a window's rows per bin
 * times the calibrated probability the reference data gave that bin). The bins are the baseline's
 * prediction bins over P(labels[1]); `edges` are their inner edges, so there are `edges.length + 1`
 * bins over [0, 1] and a score on an edge belongs to the upper bin.
 */

/**
 * The prediction bins every baseline uses (tools/training/baseline.ts): 20 of 0.05, so the edge
 * bins a served score without reading the baseline.
 */
export const PREDICTION_EDGES: readonly number[] = Array.from({ length: 19 }, (_, k) => (k + 1) / 20)

/** Per prediction bin: rows and label-positive rows (fractional for an estimate). */
export interface QualityBin {
  rows: number
  positives: number
}

const figure = z.number().nullable()

/** Quality figures of one model version over a window; null where the rows cannot say. */
export const qualityFigures = z.object({
  labels: z.number().nonnegative().describe('rows the figures rest on: labelled rows for realized, predicted rows for estimated'),
  accuracy: figure.describe('class by the config threshold (0.5 without one), which sits on a bin edge'),
  roc_auc: figure.describe('binned ROC AUC: a positive and a negative in the same bin count one half'),
  log_loss: figure,
  ece: figure.describe('expected calibration error over the prediction bins: Σ rows_i/n · |mean p_i − positives_i/rows_i|'),
})

export type QualityFigures = z.infer<typeof qualityFigures>

export interface QualityOptions {
  /** Σ per-row log loss over the labelled rows (realized); without it the log loss comes from `meanProbability`. */
  logLossSum?: number
  /** Mean P(labels[1]) of the rows in each bin; without it a bin's midpoint stands in for ECE. */
  meanProbability?: readonly number[]
}

/** Probabilities are clipped this far from 0 and 1 (as scikit-learn's log_loss), so a confident miss costs a finite amount. */
const CLIP = 1e-15
/** How far a threshold may sit from an edge and still count as on it: JSON decimals are not exact binary fractions. */
const EDGE_TOLERANCE = 1e-9

/** Log loss of one row with score `p` for labels[1] whose label is labels[1] (`positive`) or not. */
export const rowLogLoss = (p: number, positive: boolean): number => {
  const q = Math.min(1 - CLIP, Math.max(CLIP, p))
  return -Math.log(positive ? q : 1 - q)
}

const edgeIndex = (edges: readonly number[], threshold: number): number => edges.findIndex((e) => Math.abs(e - threshold) <= EDGE_TOLERANCE)

/** Whether binned accuracy can classify by `threshold`: only a bin edge splits the rows exactly. */
export const onBinEdge = (edges: readonly number[], threshold: number): boolean => edgeIndex(edges, threshold) >= 0

/** First bin predicted positive: the one whose lower edge is the threshold. */
const firstPositiveBin = (edges: readonly number[], threshold: number): number => {
  const i = edgeIndex(edges, threshold)
  if (i < 0) throw new RangeError(`threshold ${threshold} is not a prediction bin edge, so binned accuracy cannot classify by it`)
  return i + 1
}

const midpoint = (edges: readonly number[], i: number): number => ((i === 0 ? 0 : edges[i - 1]) + (i === edges.length ? 1 : edges[i])) / 2

/**
 * Quality figures from per-bin counts; every figure is null for an empty window, AUC also without
 * both classes, accuracy also for a `null` threshold (one no bin edge matches).
 */
export const binnedQuality = (
  edges: readonly number[],
  threshold: number | undefined | null,
  bins: readonly QualityBin[],
  options: QualityOptions = {},
): QualityFigures => {
  if (bins.length !== edges.length + 1) throw new RangeError(`${bins.length} bins for ${edges.length} edges; expected ${edges.length + 1}`)
  const { meanProbability, logLossSum } = options
  if (meanProbability !== undefined && meanProbability.length !== bins.length) {
    throw new RangeError(`${meanProbability.length} mean probabilities for ${bins.length} bins`)
  }
  bins.forEach(({ rows, positives }, i) => {
    if (!(Number.isFinite(rows) && positives >= 0 && positives <= rows)) {
      throw new RangeError(`bin ${i} has ${positives} positives of ${rows} rows, not 0 ≤ positives ≤ rows`)
    }
  })
  const positiveFrom = threshold === null ? undefined : firstPositiveBin(edges, threshold ?? 0.5)
  let n = 0
  let positives = 0
  let correct = 0
  let ranked = 0
  let negativesBelow = 0
  let calibrationGap = 0
  let expectedLogLoss = 0
  bins.forEach((bin, i) => {
    const negatives = bin.rows - bin.positives
    n += bin.rows
    positives += bin.positives
    if (positiveFrom !== undefined) correct += i >= positiveFrom ? bin.positives : negatives
    ranked += bin.positives * (negativesBelow + negatives / 2)
    negativesBelow += negatives
    if (bin.rows === 0) return
    const p = meanProbability?.[i] ?? midpoint(edges, i)
    calibrationGap += Math.abs(bin.rows * p - bin.positives)
    expectedLogLoss += bin.positives * rowLogLoss(p, true) + negatives * rowLogLoss(p, false)
  })
  if (n === 0) return { labels: 0, accuracy: null, roc_auc: null, log_loss: null, ece: null }
  const negatives = n - positives
  const logLoss = logLossSum ?? (meanProbability === undefined ? undefined : expectedLogLoss)
  return {
    labels: n,
    accuracy: positiveFrom === undefined ? null : correct / n,
    roc_auc: positives > 0 && negatives > 0 ? ranked / (positives * negatives) : null,
    log_loss: logLoss === undefined ? null : logLoss / n,
    ece: calibrationGap / n,
  }
}
