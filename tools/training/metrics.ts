/** Holdout scores of a binary classifier, from the probability of the positive class. */
export interface BinaryMetrics {
  rows: number
  accuracy: number
  auc: number
  log_loss: number
}

/** Clipping keeps one confident mistake from making the log loss infinite. */
const EPSILON = 1e-15

/**
 * ROC AUC as the Mann-Whitney statistic: the chance a random positive outranks a random negative,
 * ties counting half (so a constant predictor scores exactly 0.5).
 */
export const rocAuc = (scores: ArrayLike<number>, labels: ArrayLike<number>): number => {
  const order = Array.from({ length: scores.length }, (_, i) => i).sort((a, b) => scores[a] - scores[b])
  let positives = 0
  let rankSum = 0
  for (let start = 0; start < order.length; ) {
    let end = start
    while (end + 1 < order.length && scores[order[end + 1]] === scores[order[start]]) end++
    const averageRank = (start + end) / 2 + 1
    for (let k = start; k <= end; k++) {
      if (labels[order[k]] === 1) {
        positives++
        rankSum += averageRank
      }
    }
    start = end + 1
  }
  const negatives = order.length - positives
  if (positives === 0 || negatives === 0) throw new Error('AUC needs both classes')
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives)
}

export const binaryMetrics = (scores: ArrayLike<number>, labels: ArrayLike<number>, threshold = 0.5): BinaryMetrics => {
  let correct = 0
  let loss = 0
  for (let i = 0; i < labels.length; i++) {
    const p = Math.min(1 - EPSILON, Math.max(EPSILON, scores[i]))
    if ((scores[i] >= threshold ? 1 : 0) === labels[i]) correct++
    loss -= labels[i] === 1 ? Math.log(p) : Math.log(1 - p)
  }
  return { rows: labels.length, accuracy: correct / labels.length, auc: rocAuc(scores, labels), log_loss: loss / labels.length }
}

/** Share of labels that are 1. */
export const positiveRate = (labels: ArrayLike<number>): number => {
  let positives = 0
  for (let i = 0; i < labels.length; i++) positives += labels[i]
  return positives / labels.length
}

/**
 * The bar a model has to clear: always predict the training base rate (so the majority class
 * whenever the base rate is on the majority side of the threshold).
 */
export const constantMetrics = (baseRate: number, labels: ArrayLike<number>, threshold = 0.5): BinaryMetrics =>
  binaryMetrics(new Float64Array(labels.length).fill(baseRate), labels, threshold)
