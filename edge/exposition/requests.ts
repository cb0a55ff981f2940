import { labelValue } from './text.ts'
import { BUCKET, DECISIONS, DURATION_BUCKETS, FALLBACKS, FEEDBACK, PREDICTION_CACHE, type PredictionCacheOutcome, REQUESTS, SUM_US, type Tally, field, fieldParts } from '../stores/tallies/tally.ts'

/** One arm's share of a model's traffic, as the rollout store holds it at scrape time. */
export interface ArmWeight {
  model: string
  version: number
  arm: string
  weight: number
}

export const REQUESTS_METRIC = 'edge_infer_edge_requests_total'
export const DURATION_METRIC = 'edge_infer_edge_request_duration_seconds'
export const WEIGHT_METRIC = 'edge_infer_rollout_weight_percent'
export const DECISIONS_METRIC = 'edge_infer_rollout_decisions_total'
export const FALLBACKS_METRIC = 'edge_infer_edge_canary_fallbacks_total'
export const FEEDBACK_METRIC = 'edge_infer_feedback_items_total'
export const CACHE_METRICS: Record<PredictionCacheOutcome, string> = {
  hits: 'edge_infer_edge_cache_hits_total',
  misses: 'edge_infer_edge_cache_misses_total',
  evictions: 'edge_infer_edge_cache_evictions_total',
  observe_failures: 'edge_infer_edge_cache_observe_failures_total',
}
const CACHE_HELP: Record<PredictionCacheOutcome, string> = {
  hits: 'Rows the edge prediction cache answered without a backend call, by model and served version.',
  misses: 'Rows of cache-enabled models sent to the backend (not cached or expired; every row of a canary request not wholly cached), by model and looked-up version.',
  evictions: 'Rows dropped from the edge prediction cache to keep an isolate within its entry bound, by model and version.',
  observe_failures: "Rows answered from the edge prediction cache that the backend's drift counter did not confirm counting after the edge's bounded resends, by model and version.",
}

const labels = (pairs: ReadonlyArray<readonly [string, string]>): string => `{${pairs.map(([k, v]) => `${k}="${labelValue(v)}"`).join(',')}}`

const family = (name: string, type: string, help: string, samples: string[]): string[] => [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples]

/** A field's label values, when it is of `kind` and has `arity` of them (a hand-written field may not). */
const valuesOf = (name: string, kind: string, arity: number): string[] | undefined => {
  const parts = fieldParts(name)
  return parts[0] === kind && parts.length === arity + 1 ? parts.slice(1) : undefined
}

const statusClass = (code: string): string => `${code.charAt(0)}xx`

const requestSamples = (tally: Tally): string[] => {
  const samples: string[] = []
  for (const [name, count] of tally) {
    const v = valuesOf(name, REQUESTS, 5)
    if (!v) continue
    const [model, version, variant, code, servedBy] = v
    samples.push(`${REQUESTS_METRIC}${labels([['model', model], ['version', version], ['variant', variant], ['status_class', statusClass(code)], ['code', code], ['served_by', servedBy]])} ${count}`)
  }
  return samples.sort()
}

/** Per (model, version, variant): the cumulative buckets, the sum and the count, from the per-bucket counts. */
const durationSamples = (tally: Tally): string[] => {
  const series = new Map<string, string[]>()
  for (const name of tally.keys()) {
    const v = valuesOf(name, BUCKET, 4)
    if (v) series.set(field(v[0], v[1], v[2]), v.slice(0, 3))
  }
  const samples: string[] = []
  for (const [key, [model, version, variant]] of [...series].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const base: Array<[string, string]> = [['model', model], ['version', version], ['variant', variant]]
    let cumulative = 0
    DURATION_BUCKETS.forEach((le, i) => {
      cumulative += tally.get(field(BUCKET, key, i)) ?? 0
      samples.push(`${DURATION_METRIC}_bucket${labels([...base, ['le', String(le)]])} ${cumulative}`)
    })
    cumulative += tally.get(field(BUCKET, key, DURATION_BUCKETS.length)) ?? 0
    samples.push(`${DURATION_METRIC}_bucket${labels([...base, ['le', '+Inf']])} ${cumulative}`)
    samples.push(`${DURATION_METRIC}_sum${labels(base)} ${(tally.get(field(SUM_US, key)) ?? 0) / 1e6}`)
    samples.push(`${DURATION_METRIC}_count${labels(base)} ${cumulative}`)
  }
  return samples
}

/** One sample per field of `kind`, its label values named by `names`, sorted. */
const counterSamples = (tally: Tally, kind: string, metric: string, names: readonly string[]): string[] => {
  const samples: string[] = []
  for (const [name, count] of tally) {
    const v = valuesOf(name, kind, names.length)
    if (v) samples.push(`${metric}${labels(names.map((label, i) => [label, v[i]] as const))} ${count}`)
  }
  return samples.sort()
}

/** The prediction cache's rows of one outcome, per model and version. */
const cacheFamily = (tally: Tally, outcome: PredictionCacheOutcome): string[] => {
  const samples: string[] = []
  for (const [name, count] of tally) {
    const v = valuesOf(name, PREDICTION_CACHE, 3)
    if (v && v[2] === outcome) samples.push(`${CACHE_METRICS[outcome]}${labels([['model', v[0]], ['version', v[1]]])} ${count}`)
  }
  return family(CACHE_METRICS[outcome], 'counter', CACHE_HELP[outcome], samples.sort())
}

/** The models the counts name (for rollout weights when the backend cannot list its models). */
export const countedModels = (tally: Tally): string[] => {
  const models = new Set<string>()
  for (const name of tally.keys()) {
    const v = valuesOf(name, REQUESTS, 5)
    if (v && v[0] !== 'other' && v[0] !== 'none') models.add(v[0])
  }
  return [...models]
}

/** Prometheus text exposition (0.0.4) of the request counts, their durations, canary fallbacks, feedback items, the rollout weights and decisions. */
export const requestMetricsExposition = (tally: Tally, weights: readonly ArmWeight[]): string =>
  [
    ...family(REQUESTS_METRIC, 'counter', 'Requests the edge answered (refusals included) and shadow calls, by model, routed version, variant, status and the tier whose answer it was (edge: the edge answered itself).', requestSamples(tally)),
    ...family(DURATION_METRIC, 'histogram', 'Time from a request\'s arrival at the edge to its response (shadow calls: from sending to answer), by model, routed version and variant.', durationSamples(tally)),
    ...family(WEIGHT_METRIC, 'gauge', 'Share of a model\'s traffic each rollout arm gets, in percent, as the rollout store holds it now.', weights.map((w) => `${WEIGHT_METRIC}${labels([['model', w.model], ['version', String(w.version)], ['arm', w.arm]])} ${w.weight}`).sort()),
    ...family(FALLBACKS_METRIC, 'counter', 'Canary calls that failed (error, timeout or non-finite output) and were retried on the stable arm, by model, canary version and reason.', counterSamples(tally, FALLBACKS, FALLBACKS_METRIC, ['model', 'version', 'reason'])),
    ...family(FEEDBACK_METRIC, 'counter', 'Feedback items (ground-truth labels) by the model of the prediction they label ("none" when no served record was found) and result: accepted, duplicate, unknown_or_expired, invalid_label, invalid_index.', counterSamples(tally, FEEDBACK, FEEDBACK_METRIC, ['model', 'result'])),
    ...family(DECISIONS_METRIC, 'counter', 'Rollout decisions and changes recorded in the rollout history, by model and action.', counterSamples(tally, DECISIONS, DECISIONS_METRIC, ['model', 'action'])),
    ...cacheFamily(tally, 'hits'),
    ...cacheFamily(tally, 'misses'),
    ...cacheFamily(tally, 'evictions'),
    ...cacheFamily(tally, 'observe_failures'),
    '',
  ].join('\n')
