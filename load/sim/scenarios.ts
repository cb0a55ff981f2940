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

export const runSetting = (tier: Tier, trace: Trace, setting: Setting): SettingOutcome => {
  const random = createRandom(tier.seed)
  const result = simulate({
    arrivals: arrivalsOf(trace, random),
    durationS: traceDurationS(trace),
    batcher: tier.batcher,
    serviceTime: tier.serviceTime,
    routing: tier.routing,
    scaling: { kind: 'autoscaler', config: setting.config, startDelayS: setting.startDelayS, scrapeIntervalS: tier.scrapeIntervalS },
    random,
    bucketS: BUCKET_S,
    slaP95S: tier.slaP95S,
  })
  const violated = result.buckets.filter((b) => b.slaViolated).length
  return { setting, result, violatedShare: violated / Math.max(1, result.buckets.length) }
}

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

/** Linear interpolation of the rate at which the curve's depth reaches `depth`. */
const rateAtDepth = (curve: readonly ReplicaPoint[], depth: number): number => {
  for (let i = 1; i < curve.length; i++) {
    const [a, b] = [curve[i - 1], curve[i]]
    if (b.meanDepth >= depth) return a.rps + ((depth - a.meanDepth) / (b.meanDepth - a.meanDepth)) * (b.rps - a.rps)
  }
  return curve[curve.length - 1].rps
}

/** Violating at most this share of the trace's minutes passes. */
export const ACCEPTED_VIOLATION_SHARE = 0.01

/**
 * Target: the depth one replica shows at the highest steady rate that meets the SLA, less the HPA's
 * tolerance (the controller lets the gauge sit 10 % above target without acting). Max: the peak
 * over the per-replica rate at that target. Min: the fewest replicas, run against the trace, that
 * keep the violating minutes within ACCEPTED_VIOLATION_SHARE while new pods start.
 */
export const recommend = (tier: Tier, trace: Trace, base: Setting, curve: readonly ReplicaPoint[], peakRps: number): Recommendation => {
  const meeting = curve.filter((p) => p.p95S <= tier.slaP95S && p.rejected === 0)
  if (meeting.length === 0) throw new Error(`no steady rate meets a p95 of ${tier.slaP95S * 1000} ms: one replica's batching delay and service time alone exceed it`)
  const best = meeting[meeting.length - 1]
  const target = Math.max(1, Math.floor(best.meanDepth / (1 + DEFAULT_TOLERANCE)))
  const targetRps = rateAtDepth(curve, target)
  const maxReplicas = Math.max(1, Math.ceil(peakRps / targetRps))
  const tried: SettingOutcome[] = []
  for (let min = 1; min <= maxReplicas; min++) {
    const setting: Setting = {
      name: `recommended (min ${min}, max ${maxReplicas}, target ${target})`,
      config: { ...base.config, minReplicas: min, maxReplicas, target },
      startDelayS: base.startDelayS,
    }
    const outcome = runSetting(tier, trace, setting)
    tried.push(outcome)
    if (outcome.violatedShare <= ACCEPTED_VIOLATION_SHARE) break
  }
  const outcome = tried[tried.length - 1]
  return { slaRps: best.rps, slaDepth: best.meanDepth, target, targetRps, maxReplicas, minReplicas: outcome.setting.config.minReplicas, outcome, tried }
}
