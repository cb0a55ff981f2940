import type { AutoscalerConfig, ScalingRules } from './scaler-config.ts'

/**
 * The horizontal-pod-autoscaler controller's arithmetic, as in kubernetes/kubernetes
 * pkg/controller/podautoscaler (replica_calculator.go, horizontal.go): the metric's recommendation
 * with the tolerance, then the stabilization windows, then the rate policies and min/max.
 */

/** --horizontal-pod-autoscaler-tolerance's default. */
export const DEFAULT_TOLERANCE = 0.1
/** --horizontal-pod-autoscaler-sync-period's default. */
export const HPA_SYNC_PERIOD_S = 15

/**
 * desiredReplicas = ceil(currentReplicas × currentMetricValue / desiredMetricValue), unchanged while
 * the ratio is within the tolerance (the documentation's formula, for a per-pod average).
 */
export const recommendFromAverage = (currentReplicas: number, currentValue: number, targetValue: number, tolerance = DEFAULT_TOLERANCE): number => {
  const ratio = currentValue / targetValue
  return Math.abs(1 - ratio) <= tolerance ? currentReplicas : Math.ceil(ratio * currentReplicas)
}

/**
 * An External metric with an AverageValue target, what KEDA's trigger becomes
 * (GetExternalPerPodMetricReplicas): the total over the target, ceil(total / target), unless the
 * ratio to the current replicas is within the tolerance.
 */
export const recommendFromTotal = (currentReplicas: number, total: number, targetPerReplica: number, tolerance = DEFAULT_TOLERANCE): number => {
  const ratio = total / (targetPerReplica * currentReplicas)
  return Math.abs(1 - ratio) <= tolerance ? currentReplicas : Math.ceil(total / targetPerReplica)
}

/**
 * A Pods metric with an AverageValue target (the HPA-only variant), as calcPlainMetricReplicas
 * treats it: the average over the pods that report, and pods without a sample yet counted as 0
 * when scaling up and as at the target when scaling down, so they damp the change rather than
 * cause one.
 */
export const recommendFromPods = (currentReplicas: number, values: readonly number[], missingPods: number, targetValue: number, tolerance = DEFAULT_TOLERANCE): number => {
  if (values.length === 0) return currentReplicas
  const sum = values.reduce((s, v) => s + v, 0)
  const ratio = sum / values.length / targetValue
  if (missingPods === 0) return Math.abs(1 - ratio) <= tolerance ? currentReplicas : Math.ceil(ratio * values.length)
  const filled = ratio < 1 ? sum + missingPods * targetValue : sum
  const pods = values.length + missingPods
  const newRatio = filled / pods / targetValue
  if (Math.abs(1 - newRatio) <= tolerance || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1)) return currentReplicas
  const replicas = Math.ceil(newRatio * pods)
  if ((newRatio < 1 && replicas > currentReplicas) || (newRatio > 1 && replicas < currentReplicas)) return currentReplicas
  return replicas
}

/**
 * computeReplicasForMetrics with several metrics: each gives its own recommendation and the HPA
 * takes the largest. A metric it cannot read (`undefined`) is left out, but then it does not scale
 * down: the missing one might have asked for more.
 */
export const recommendFromMetrics = (currentReplicas: number, recommendations: ReadonlyArray<number | undefined>): number => {
  const valid = recommendations.filter((r): r is number => r !== undefined)
  if (valid.length === 0) return currentReplicas
  const largest = Math.max(...valid)
  return valid.length < recommendations.length && largest < currentReplicas ? currentReplicas : largest
}

interface TimedValue {
  at: number
  value: number
}

/** Replicas added (or removed) by the events of the last `periodSeconds`. */
const changeInPeriod = (events: readonly TimedValue[], now: number, periodSeconds: number): number =>
  events.reduce((sum, e) => (e.at > now - periodSeconds ? sum + e.value : sum), 0)

/** calculateScaleUpLimitWithScalingRules: the most replicas the policies allow now. */
export const scaleUpLimit = (current: number, rules: ScalingRules, ups: readonly TimedValue[], downs: readonly TimedValue[], now: number): number => {
  if (rules.selectPolicy === 'Disabled') return current
  const proposals = rules.policies.map((p) => {
    const periodStart = current - changeInPeriod(ups, now, p.periodSeconds) + changeInPeriod(downs, now, p.periodSeconds)
    return p.type === 'Pods' ? periodStart + p.value : Math.ceil(periodStart * (1 + p.value / 100))
  })
  return rules.selectPolicy === 'Min' ? Math.min(...proposals) : Math.max(...proposals)
}

/** calculateScaleDownLimitWithBehaviors: the fewest replicas the policies allow now. */
export const scaleDownLimit = (current: number, rules: ScalingRules, ups: readonly TimedValue[], downs: readonly TimedValue[], now: number): number => {
  if (rules.selectPolicy === 'Disabled') return current
  const proposals = rules.policies.map((p) => {
    const periodStart = current - changeInPeriod(ups, now, p.periodSeconds) + changeInPeriod(downs, now, p.periodSeconds)
    return p.type === 'Pods' ? periodStart - p.value : Math.trunc(periodStart * (1 - p.value / 100))
  })
  // Min picks the smallest change, which for scaling down is the largest count.
  return rules.selectPolicy === 'Min' ? Math.max(...proposals) : Math.min(...proposals)
}

/** One HPA object's memory between syncs: past recommendations and scale events. */
export class HorizontalPodAutoscaler {
  private recommendations: TimedValue[] = []
  private ups: TimedValue[] = []
  private downs: TimedValue[] = []

  constructor(private readonly config: Pick<AutoscalerConfig, 'minReplicas' | 'maxReplicas' | 'behavior'>) {}

  /**
   * One reconcile at `now` (seconds) with the metric's recommendation: the replica count the
   * controller writes to the scale subresource.
   */
  reconcile(now: number, currentReplicas: number, metricRecommendation: number): number {
    const { minReplicas, maxReplicas } = this.config
    // Outside min/max the controller moves straight back inside, without behaviors.
    const desired = currentReplicas > maxReplicas ? maxReplicas
      : currentReplicas < minReplicas ? minReplicas
      : this.normalize(now, currentReplicas, metricRecommendation)
    this.record(now, currentReplicas, desired)
    return desired
  }

  /** normalizeDesiredReplicasWithBehaviors: stabilize, then limit the rate, then clamp. */
  private normalize(now: number, current: number, recommended: number): number {
    const { scaleUp, scaleDown } = this.config.behavior
    const stabilized = this.stabilize(now, current, recommended, scaleUp.stabilizationWindowSeconds, scaleDown.stabilizationWindowSeconds)
    if (stabilized > current) {
      const limit = Math.max(current, scaleUpLimit(current, scaleUp, this.ups, this.downs, now))
      return Math.min(stabilized, limit, this.config.maxReplicas)
    }
    if (stabilized < current) {
      const limit = Math.min(current, scaleDownLimit(current, scaleDown, this.ups, this.downs, now))
      return Math.max(stabilized, limit, this.config.minReplicas)
    }
    return stabilized
  }

  /**
   * stabilizeRecommendationWithBehaviors: a scale-up only to the lowest recommendation of the
   * up-window, a scale-down only to the highest of the down-window (the current one included).
   */
  private stabilize(now: number, current: number, recommended: number, upWindowS: number, downWindowS: number): number {
    let up = recommended
    let down = recommended
    for (const r of this.recommendations) {
      if (r.at > now - upWindowS) up = Math.min(up, r.value)
      if (r.at > now - downWindowS) down = Math.max(down, r.value)
    }
    const keepFrom = now - Math.max(upWindowS, downWindowS)
    this.recommendations = this.recommendations.filter((r) => r.at >= keepFrom)
    this.recommendations.push({ at: now, value: recommended })
    return Math.min(Math.max(current, up), down)
  }

  private record(now: number, current: number, desired: number): void {
    const longest = (rules: ScalingRules) => Math.max(0, ...rules.policies.map((p) => p.periodSeconds))
    this.ups = this.ups.filter((e) => e.at > now - longest(this.config.behavior.scaleUp))
    this.downs = this.downs.filter((e) => e.at > now - longest(this.config.behavior.scaleDown))
    if (desired > current) this.ups.push({ at: now, value: desired - current })
    if (desired < current) this.downs.push({ at: now, value: current - desired })
  }
}
