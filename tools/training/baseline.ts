import type { Feature, FeatureSpec, FeatureValue } from '../../shared/feature-spec.ts'
import { UNSEEN_CATEGORY } from '../../shared/feature-spec.ts'
import {
  BASELINE_FORMAT, OTHER_CATEGORY, PREDICTION_LOGIT_BOUND, clampedLogit, psiReference, stepScale, sumSteps,
  type CategoricalBins, type DriftThresholds, type EffectSizeReference, type NumericBins,
} from '../../backend/monitor/drift/baseline-format.ts'
import { binIndex, type Moments } from '../../shared/drift/statistics.ts'
import { calibrateEffect, calibrateThresholds, heldOutWindows } from './drift-thresholds.ts'

/**
 * `baseline.json`: the reference distributions a model version ships with. The monitor counts live
 * traffic into exactly these bins and compares, so the bins are cut and counted with the shared `binIndex`.
 */

const BINS = 20
/** Categories rarer than this, together, fold into `__other__`. */
const CATEGORY_COVERAGE = 0.99

export type NumericBaseline = NumericBins & { thresholds: DriftThresholds; effect_size: EffectSizeReference }
export type CategoricalBaseline = CategoricalBins & { thresholds: DriftThresholds }
export type FeatureBaseline = NumericBaseline | CategoricalBaseline

export interface Baseline {
  format: typeof BASELINE_FORMAT
  model: string
  version: number
  rows: number
  features: FeatureBaseline[]
  prediction: {
    /** Over the probability of the positive label (labels[1]). */
    edges: number[]
    counts: number[]
    class_counts: Record<string, number>
    thresholds: DriftThresholds
    /** Over logit P(labels[1]) clamped to ±PREDICTION_LOGIT_BOUND. */
    effect_size: EffectSizeReference
    /**
     * Per prediction bin: the counted rows times the share of held-out rows in it that had label
     * labels[1] (so positives_i / counts_i is the bin's calibrated probability; fractional), and the
     * held-out rows' mean P(labels[1]) (the bin's midpoint when none fell in it).
     */
    calibration: { positives: number[]; mean_probability: number[] }
  }
}

/** The prediction histogram's reference counts: its bins, no missing cell. */
export const predictionReference = (baseline: Baseline): number[] => [...baseline.prediction.counts]

const histogram = (edges: readonly number[], values: Iterable<number>): number[] => {
  const counts = new Array<number>(edges.length + 1).fill(0)
  for (const v of values) counts[binIndex(edges, v)]++
  return counts
}

/**
 * Interior quantile edges of sorted values. Ties collapse, and an edge at the minimum is dropped
 * because it would only bound an always-empty bin below it.
 */
export const quantileEdges = (sorted: readonly number[], bins = BINS): number[] => {
  const edges: number[] = []
  for (let k = 1; k < bins; k++) {
    const e = sorted[Math.floor((k * sorted.length) / bins)]
    if (e > sorted[0] && e !== edges[edges.length - 1]) edges.push(e)
  }
  return edges
}

type Column = readonly (FeatureValue | undefined)[]

/** Moments of values clamped to [low, high] on the grid the live sums use (population sd, as the report's). */
const clampedMoments = (values: readonly number[], low: number, high: number): Moments => {
  const scale = stepScale(low, high)
  if (scale === 0) return { n: values.length, mean: low, sd: 0 }
  let total = 0
  let squares = 0
  for (const v of values) {
    const steps = sumSteps(v, low, high, scale)
    total += steps
    squares += steps * steps
  }
  const mean = total / values.length
  return { n: values.length, mean: low + mean / scale, sd: Math.sqrt(Math.max(0, squares / values.length - mean * mean)) / scale }
}

/** The effect size's reference: the moments of `values`, with levels from the held-out windows' moments. */
const effectReference = (values: readonly number[], windows: readonly (readonly number[])[], low: number, high: number): EffectSizeReference => {
  const reference = clampedMoments(values, low, high)
  const thresholds = calibrateEffect(reference, windows.map((w) => clampedMoments(w, low, high)))
  return { mean: reference.mean, sd: reference.sd, thresholds }
}

const presentNumbers = (values: Column): number[] => values.filter((v) => v !== undefined).map(Number)

/** `values` in the numeric PSI layout over fixed edges. */
const numericLayout = (edges: readonly number[], values: Column): number[] => {
  const present = presentNumbers(values)
  return [values.length - present.length, ...histogram(edges, present)]
}

const numericBins = (name: string, values: Column): NumericBins => {
  const sorted = presentNumbers(values).sort((a, b) => a - b)
  if (sorted.length === 0) throw new Error(`feature "${name}" has no values to take a baseline from`)
  const edges = quantileEdges(sorted)
  const [missing, ...counts] = numericLayout(edges, values)
  return {
    name,
    kind: 'numeric',
    edges,
    counts,
    min: sorted[0],
    max: sorted[sorted.length - 1],
    missing,
    missing_rate: missing / values.length,
  }
}

interface Tally {
  missing: number
  /** Every known category, counted or 0. */
  known: Map<string, number>
  unseen: number
}

const tally = (known: readonly string[], values: Column): Tally => {
  const counts = new Map<string, number>(known.map((c) => [c, 0]))
  let missing = 0
  let unseen = 0
  for (const v of values) {
    if (v === undefined) {
      missing++
      continue
    }
    const key = String(v)
    const n = counts.get(key)
    if (n === undefined) unseen++
    else counts.set(key, n + 1)
  }
  return { missing, known: counts, unseen }
}

/** A tally in the categorical PSI layout: known categories not `listed` make up `__other__`. */
const categoricalLayout = (listed: readonly string[], { missing, known, unseen }: Tally): number[] => {
  const cells = listed.map((c) => known.get(c) ?? 0)
  const listedTotal = cells.reduce((sum, n) => sum + n, 0)
  const knownTotal = [...known.values()].reduce((sum, n) => sum + n, 0)
  return [missing, ...cells, knownTotal - listedTotal, unseen]
}

const categoricalBins = (name: string, known: readonly string[], values: Column, rankByCount: boolean): CategoricalBins => {
  const counted = tally(known, values)
  const count = (c: string): number => counted.known.get(c) ?? 0
  const knownTotal = values.length - counted.missing - counted.unseen
  // Stable sort: equal counts keep spec order, so the result never depends on the sample's order.
  const ranked = rankByCount ? known.toSorted((a, b) => count(b) - count(a)) : [...known]
  const categories: string[] = []
  let covered = 0
  for (const c of ranked) {
    if (rankByCount && covered >= CATEGORY_COVERAGE * knownTotal) break
    categories.push(c)
    covered += count(c)
  }
  const [missing, ...cells] = categoricalLayout(categories, counted)
  const keys = [...categories, OTHER_CATEGORY, UNSEEN_CATEGORY]
  const counts = Object.fromEntries(keys.map((c, i) => [c, cells[i]]))
  return { name, kind: 'categorical', categories, counts, missing, missing_rate: missing / values.length }
}

/** Booleans bin as the two categories "false" and "true", always both, in that order. */
const BOOLEAN_CATEGORIES = ['false', 'true']

/** The feature's bins from the counted rows, with levels calibrated on the held-out windows. */
const featureBaseline = (f: Feature, values: Column, windows: readonly Column[]): FeatureBaseline => {
  const categorical = (known: readonly string[], rankByCount: boolean): CategoricalBaseline => {
    const bins = categoricalBins(f.name, known, values, rankByCount)
    const windowCounts = windows.map((w) => categoricalLayout(bins.categories, tally(known, w)))
    return { ...bins, thresholds: calibrateThresholds(psiReference(bins), windowCounts) }
  }
  switch (f.type) {
    case 'number':
    case 'integer': {
      const bins = numericBins(f.name, values)
      return {
        ...bins,
        thresholds: calibrateThresholds(psiReference(bins), windows.map((w) => numericLayout(bins.edges, w))),
        effect_size: effectReference(presentNumbers(values), windows.map(presentNumbers), bins.min, bins.max),
      }
    }
    case 'boolean':
      return categorical(BOOLEAN_CATEGORIES, false)
    case 'category':
      return categorical(f.categories, true)
  }
}

type Instance = Readonly<Record<string, FeatureValue>>

export interface BaselineInput {
  model: string
  version: number
  spec: FeatureSpec
  instances: readonly Instance[]
  /** The model's probability of labels[1] for each instance. */
  positive: ArrayLike<number>
  labels: readonly [string, string]
  threshold: number
  /**
   * Rows from the same distribution that the counts leave out, with the model's probability of
   * labels[1] for each: cut into monitoring windows, they show how far PSI moves without drift.
   * `outcomes` (1 where the row's label is labels[1], else 0) calibrate the prediction bins for CBPE:
   * on rows the model never trained on, since on its training rows a model looks surer than it is.
   */
  heldOut: { instances: readonly Instance[]; positive: ArrayLike<number>; outcomes: ArrayLike<number> }
}

/**
 * Per prediction bin, from the held-out rows: the label-positive share, as that share of the bin's
 * counted rows (`positives_i / counts_i` is what CBPE reads), and the mean score (the midpoint
 * where no held-out row fell; a bin with counted rows but no held-out one takes its midpoint as its share).
 */
const calibration = (edges: readonly number[], counts: readonly number[], scores: readonly number[], outcomes: ArrayLike<number>): Baseline['prediction']['calibration'] => {
  if (outcomes.length !== scores.length) throw new Error(`${outcomes.length} outcomes for ${scores.length} scored instances`)
  const positives = new Array<number>(edges.length + 1).fill(0)
  const totals = new Array<number>(edges.length + 1).fill(0)
  const rows = new Array<number>(edges.length + 1).fill(0)
  scores.forEach((p, r) => {
    const bin = binIndex(edges, p)
    rows[bin]++
    totals[bin] += p
    if (outcomes[r] === 1) positives[bin]++
  })
  const midpoint = (i: number) => ((i === 0 ? 0 : edges[i - 1]) + (i === edges.length ? 1 : edges[i])) / 2
  const meanProbability = rows.map((n, i) => (n === 0 ? midpoint(i) : totals[i] / n))
  return { positives: counts.map((c, i) => c * (rows[i] === 0 ? meanProbability[i] : positives[i] / rows[i])), mean_probability: meanProbability }
}

export const computeBaseline = ({ model, version, spec, instances, positive, labels, threshold, heldOut }: BaselineInput): Baseline => {
  const heldOutRows = heldOutWindows(heldOut.instances)
  const features = spec.features.map((f) => {
    const column = (rows: readonly Instance[]): Column => rows.map((instance) => instance[f.name])
    return featureBaseline(f, column(instances), heldOutRows.map(column))
  })
  const predictionEdges = Array.from({ length: BINS - 1 }, (_, k) => (k + 1) / BINS)
  const scores = Array.from(positive)
  const high = scores.filter((p) => p >= threshold).length
  const counts = histogram(predictionEdges, scores)
  const heldOutScores = heldOutWindows(Array.from(heldOut.positive))
  return {
    format: BASELINE_FORMAT,
    model,
    version,
    rows: instances.length,
    features,
    prediction: {
      edges: predictionEdges,
      counts,
      class_counts: { [labels[0]]: scores.length - high, [labels[1]]: high },
      thresholds: calibrateThresholds(counts, heldOutScores.map((w) => histogram(predictionEdges, w))),
      effect_size: effectReference(scores.map(clampedLogit), heldOutScores.map((w) => w.map(clampedLogit)), -PREDICTION_LOGIT_BOUND, PREDICTION_LOGIT_BOUND),
      calibration: calibration(predictionEdges, counts, Array.from(heldOut.positive), heldOut.outcomes),
    },
  }
}
