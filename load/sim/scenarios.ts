import { createRandom } from '../../tools/training/random.ts'
import type { BatcherSettings } from './batcher-settings.ts'
import { DEFAULT_TOLERANCE } from './hpa.ts'
import type { AutoscalerConfig } from './scaler-config.ts'
import { simulate, type Routing, type SimulationResult } from './simulate.ts'
import { arrivalsOf, type Trace, traceDurationS } from './trace.ts'
import type { ServiceTime } from './service-time.ts'

/** What every run of one report shares. */
export interface Tier {
  batcher: BatcherSettings
  serviceTime: ServiceTime
  routing: Routing
  scrapeIntervalS: number
  seed: number
  slaP95S: number
}

export interface Setting {
  name: string
  config: AutoscalerConfig
  startDelayS: number
}

export interface SettingOutcome {
  setting: Setting
  result: SimulationResult
  /** Share of buckets whose p95 broke the SLA or that refused a request. */
  violatedShare: number
}

export const BUCKET_S = 60

/** Mean requests per second over the trace's first minute. */
const openingRate = (trace: Trace): number => {
  const span = Math.min(BUCKET_S, traceDurationS(trace))
  if (trace.kind === 'rates') return trace.ratesPerSecond.subarray(0, span).reduce((s, r) => s + r, 0) / span
  return trace.timesS.filter((t) => t < span).length / span
}

/**
 * Pods at the trace's start: a trace starts mid-day, when the autoscaler has been running for
 * hours, so with a rate trigger the count it settles at for the first minute's rate (else the min).
 */
export const warmReplicas = (config: AutoscalerConfig, trace: Trace): number => {
  if (!config.rate) return config.minReplicas
  return Math.min(config.maxReplicas, Math.max(config.minReplicas, Math.ceil(openingRate(trace) / config.rate.target)))
}

const outcomeOf = (setting: Setting, result: SimulationResult): SettingOutcome => {
  const violated = result.buckets.filter((b) => b.slaViolated).length
  return { setting, result, violatedShare: violated / Math.max(1, result.buckets.length) }
}

const run = (tier: Tier, trace: Trace, scaling: Parameters<typeof simulate>[0]['scaling']): SimulationResult => {
  const random = createRandom(tier.seed)
  return simulate({
    arrivals: arrivalsOf(trace, random),
    durationS: traceDurationS(trace),
    batcher: tier.batcher,
    serviceTime: tier.serviceTime,
    routing: tier.routing,
    scaling,
    random,
    bucketS: BUCKET_S,
    slaP95S: tier.slaP95S,
  })
}

export const runSetting = (tier: Tier, trace: Trace, setting: Setting): SettingOutcome =>
  outcomeOf(setting, run(tier, trace, {
    kind: 'autoscaler',
    config: setting.config,
    startDelayS: setting.startDelayS,
    scrapeIntervalS: tier.scrapeIntervalS,
    initialReplicas: warmReplicas(setting.config, trace),
  }))

/** A fixed replica count, no autoscaler; named as a setting so it sits in the same tables. */
export const runFixed = (tier: Tier, trace: Trace, base: Setting, replicas: number): SettingOutcome =>
  outcomeOf({ name: `fixed ${replicas} replicas`, config: { ...base.config, minReplicas: replicas, maxReplicas: replicas }, startDelayS: base.startDelayS }, run(tier, trace, { kind: 'fixed', replicas }))

/** One replica held at a constant rate: its p95 and mean queue depth there. */
export interface ReplicaPoint {
  rps: number
  p95S: number
  meanDepth: number
  rejected: number
}

const STEADY_S = 120

export const steadyReplica = (tier: Tier, rps: number): ReplicaPoint => {
  const random = createRandom(tier.seed)
  const result = simulate({
    arrivals: arrivalsOf({ kind: 'rates', ratesPerSecond: new Float64Array(STEADY_S).fill(rps) }, random),
    durationS: STEADY_S,
    batcher: tier.batcher,
    serviceTime: tier.serviceTime,
    routing: tier.routing,
    scaling: { kind: 'fixed', replicas: 1 },
    random,
    bucketS: STEADY_S,
  })
  return { rps, p95S: result.p95S, meanDepth: result.buckets[0].meanDepth, rejected: result.rejected }
}

/** Rows per second one replica drains at with full batches: the rate no queue survives above. */
export const replicaCapacity = (tier: Tier): number => tier.batcher.maxBatchSize / tier.serviceTime(tier.batcher.maxBatchSize) * tier.batcher.instances

/** One replica from 5 % to 100 % of its capacity, in 5 % steps. */
export const replicaCurve = (tier: Tier): ReplicaPoint[] => {
  const capacity = replicaCapacity(tier)
  return Array.from({ length: 20 }, (_, i) => steadyReplica(tier, Math.round(((i + 1) / 20) * capacity)))
}

export interface Recommendation {
  /** Highest steady per-replica rate of the curve whose p95 met the SLA. */
  slaRps: number
  slaDepth: number
  target: number
  /** Per-replica rate at which the gauge sits at the recommended target. */
  targetRps: number
  maxReplicas: number
  minReplicas: number
  outcome: SettingOutcome
  /** The min replicas tried, with their outcome. */
  tried: SettingOutcome[]
}

/** Linear interpolation of `to` at which the curve's `from` reaches `value`. */
const interpolate = (curve: readonly ReplicaPoint[], from: 'rps' | 'meanDepth', to: 'rps' | 'meanDepth', value: number): number => {
  for (let i = 1; i < curve.length; i++) {
    const [a, b] = [curve[i - 1], curve[i]]
    if (b[from] >= value) return a[to] + ((value - a[from]) / (b[from] - a[from])) * (b[to] - a[to])
  }
  return curve[curve.length - 1][to]
}

/** Violating at most this share of the trace's minutes, and refusing nothing, passes. */
export const ACCEPTED_VIOLATION_SHARE = 0.01

/** The bar of the comparison with fixed counts: no minute over the SLA, nothing refused. */
export const meetsSla = (o: SettingOutcome): boolean => o.violatedShare === 0 && o.result.rejected === 0

/** One trace's autoscaled settings against the smallest fixed replica count that meets the SLA. */
export interface TraceComparison {
  name: string
  autoscaled: SettingOutcome[]
  /** The fixed counts tried, smallest first; the last meets the SLA unless none up to the limit did. */
  fixed: SettingOutcome[]
  /**
   * Whether the autoscaler has to hold fewer replica-hours than that fixed count here, or only meet
   * the SLA (a flat window, where a fixed count sized for it cannot be undercut).
   */
  mustBeat: boolean
}

/**
 * Fixed counts from the fewest whose full-batch capacity covers the peak upward (fewer cannot keep
 * a queue from growing at the peak), until one meets the SLA, at most up to `limit`.
 */
export const smallestFixed = (tier: Tier, trace: Trace, base: Setting, peakRps: number, limit: number): SettingOutcome[] => {
  const tried: SettingOutcome[] = []
  for (let n = Math.max(1, Math.ceil(peakRps / replicaCapacity(tier))); n <= limit; n++) {
    tried.push(runFixed(tier, trace, base, n))
    if (meetsSla(tried[tried.length - 1])) break
  }
  return tried
}

export const compareOnTrace = (tier: Tier, name: string, trace: Trace, settings: readonly Setting[], peakRps: number, limit: number, progress: (message: string) => void, mustBeat = true): TraceComparison => {
  const autoscaled = settings.map((s) => {
    progress(`${name}: ${s.name}`)
    return runSetting(tier, trace, s)
  })
  progress(`${name}: fixed replica counts`)
  return { name, autoscaled, fixed: smallestFixed(tier, trace, settings[0], peakRps, limit), mustBeat }
}
/** Shares of the SLA rate tried for the per-replica operating point, highest first. */
const HEADROOM_STEPS = [1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4]

/**
 * Target: the depth one replica shows at the highest steady rate that meets the SLA, less the HPA's
 * tolerance (the controller lets the gauge sit 10 % above target without acting) — lowered step by
 * step while the trace, run with the committed min, refuses requests or violates more than
 * ACCEPTED_VIOLATION_SHARE of its minutes: a spike has to fit into the headroom of the replicas
 * already running until new ones are ready. Max: the peak over the per-replica rate at that
 * target. Min: the fewest replicas (up to the committed min) that still pass.
 */
export const recommend = (tier: Tier, trace: Trace, base: Setting, curve: readonly ReplicaPoint[], peakRps: number): Recommendation => {
  const meeting = curve.filter((p) => p.p95S <= tier.slaP95S && p.rejected === 0)
  if (meeting.length === 0) throw new Error(`no steady rate meets a p95 of ${tier.slaP95S * 1000} ms: one replica's batching delay and service time alone exceed it`)
  const best = meeting[meeting.length - 1]
  const tried: SettingOutcome[] = []
  const attempt = (minReplicas: number, maxReplicas: number, target: number): SettingOutcome => {
    const outcome = runSetting(tier, trace, {
      name: `recommended (min ${minReplicas}, max ${maxReplicas}, target ${target})`,
      config: { ...base.config, minReplicas, maxReplicas, target },
      startDelayS: base.startDelayS,
    })
    tried.push(outcome)
    return outcome
  }
  const passes = (o: SettingOutcome) => o.violatedShare <= ACCEPTED_VIOLATION_SHARE && o.result.rejected === 0
  const targets = [...new Set(HEADROOM_STEPS.map((share) => Math.max(1, Math.floor(interpolate(curve, 'rps', 'meanDepth', share * best.rps) / (1 + DEFAULT_TOLERANCE)))))]
  let chosen: SettingOutcome | undefined
  for (const target of targets) {
    const maxReplicas = Math.max(base.config.minReplicas, Math.ceil(peakRps / interpolate(curve, 'meanDepth', 'rps', target)))
    const outcome = attempt(base.config.minReplicas, maxReplicas, target)
    if (passes(outcome)) {
      chosen = outcome
      break
    }
  }
  chosen ??= tried[tried.length - 1]
  const { target, maxReplicas } = chosen.setting.config
  for (let min = 1; min < base.config.minReplicas; min++) {
    const outcome = attempt(min, maxReplicas, target)
    if (passes(outcome)) {
      chosen = outcome
      break
    }
  }
  const outcome = chosen
  return { slaRps: best.rps, slaDepth: best.meanDepth, target, targetRps: interpolate(curve, 'meanDepth', 'rps', target), maxReplicas, minReplicas: outcome.setting.config.minReplicas, outcome, tried }
}
