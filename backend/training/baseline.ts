import type { FeatureSpec, FeatureValue } from '../../shared/feature-spec.ts'
import { UNSEEN_CATEGORY } from '../../shared/feature-spec.ts'

/**
 * `baseline.json`: the reference distributions a model version ships with. The monitor counts live
 * traffic into exactly these bins and compares, so the bin rule here is the monitor's bin rule.
 */

export const BASELINE_FORMAT = 1
export const OTHER_CATEGORY = '__other__'
const BINS = 20
/** Categories rarer than this, together, fold into `__other__`. */
const CATEGORY_COVERAGE = 0.99

export interface NumericBaseline {
  name: string
  kind: 'numeric'
  /** Ascending, unique; `edges.length + 1` bins. */
  edges: number[]
  counts: number[]
  min: number
  max: number
  missing_rate: number
}

export interface CategoricalBaseline {
  name: string
  kind: 'categorical'
  /** By descending count; the rest of the known categories count as `__other__`. */
  categories: string[]
  counts: Record<string, number>
  missing_rate: number
}

export interface Baseline {
  format: typeof BASELINE_FORMAT
  model: string
  version: number
  rows: number
  features: (NumericBaseline | CategoricalBaseline)[]
  prediction: {
    /** Over the probability of the positive label (labels[1]). */
    edges: number[]
    counts: number[]
    class_counts: Record<string, number>
  }
}

/** Bin of `value`: the number of edges at or below it, so a value on an edge goes to the upper bin. */
export const binIndex = (edges: readonly number[], value: number): number => {
  let lo = 0
  let hi = edges.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (edges[mid] <= value) lo = mid + 1
    else hi = mid
  }
  return lo
}

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

const numericBaseline = (name: string, values: readonly (FeatureValue | undefined)[]): NumericBaseline => {
  const present = values.filter((v) => v !== undefined).map(Number)
  if (present.length === 0) throw new Error(`feature "${name}" has no values to take a baseline from`)
  const sorted = present.toSorted((a, b) => a - b)
  const edges = quantileEdges(sorted)
  return {
    name,
    kind: 'numeric',
    edges,
    counts: histogram(edges, present),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    missing_rate: (values.length - present.length) / values.length,
  }
}

const categoricalBaseline = (
  name: string, known: readonly string[], values: readonly (FeatureValue | undefined)[], rankByCount: boolean,
): CategoricalBaseline => {
  const seen = new Map<string, number>(known.map((c) => [c, 0]))
  let unseen = 0
  let present = 0
  for (const v of values) {
    if (v === undefined) continue
    present++
    const key = String(v)
    const n = seen.get(key)
    if (n === undefined) unseen++
    else seen.set(key, n + 1)
  }
  // Stable sort: equal counts keep spec order, so the result never depends on the sample's order.
  const ranked = rankByCount ? known.toSorted((a, b) => (seen.get(b) ?? 0) - (seen.get(a) ?? 0)) : [...known]
  const categories: string[] = []
  let covered = 0
  for (const c of ranked) {
    if (rankByCount && covered >= CATEGORY_COVERAGE * (present - unseen)) break
    categories.push(c)
    covered += seen.get(c) ?? 0
  }
  const counts: Record<string, number> = {}
  for (const c of categories) counts[c] = seen.get(c) ?? 0
  counts[OTHER_CATEGORY] = present - unseen - covered
  counts[UNSEEN_CATEGORY] = unseen
  return { name, kind: 'categorical', categories, counts, missing_rate: (values.length - present) / values.length }
}

export interface BaselineInput {
  model: string
  version: number
  spec: FeatureSpec
  instances: readonly Readonly<Record<string, FeatureValue>>[]
  /** The model's probability of labels[1] for each instance. */
  positive: ArrayLike<number>
  labels: readonly [string, string]
  threshold: number
}

export const computeBaseline = ({ model, version, spec, instances, positive, labels, threshold }: BaselineInput): Baseline => {
  const features = spec.features.map((f) => {
    const values = instances.map((instance) => instance[f.name])
    switch (f.type) {
      case 'number':
      case 'integer':
        return numericBaseline(f.name, values)
      case 'boolean':
        // Booleans bin as the two categories "false" and "true", always both, in that order.
        return categoricalBaseline(f.name, ['false', 'true'], values, false)
      case 'category':
        return categoricalBaseline(f.name, f.categories, values, true)
    }
  })
  const predictionEdges = Array.from({ length: BINS - 1 }, (_, k) => (k + 1) / BINS)
  const scores = Array.from(positive)
  const high = scores.filter((p) => p >= threshold).length
  return {
    format: BASELINE_FORMAT,
    model,
    version,
    rows: instances.length,
    features,
    prediction: {
      edges: predictionEdges,
      counts: histogram(predictionEdges, scores),
      class_counts: { [labels[0]]: scores.length - high, [labels[1]]: high },
    },
  }
}
