import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'

/** One HPA scaling policy (autoscaling/v2 HPAScalingPolicy). */
export interface ScalingPolicy {
  type: 'Pods' | 'Percent'
  value: number
  periodSeconds: number
}

/** One direction of autoscaling/v2 HPAScalingRules, with Kubernetes' defaults filled in. */
export interface ScalingRules {
  stabilizationWindowSeconds: number
  selectPolicy: 'Max' | 'Min' | 'Disabled'
  policies: ScalingPolicy[]
}

export interface Behavior {
  scaleUp: ScalingRules
  scaleDown: ScalingRules
}

/** What the simulator's autoscaler runs on, as read from a rendered manifest. */
export interface AutoscalerConfig {
  source: 'keda' | 'hpa'
  minReplicas: number
  maxReplicas: number
  /** Per-replica AverageValue target of the summed queue-depth gauge. */
  target: number
  /**
   * The leading trigger, when present: per-replica AverageValue target of the arrival rate, which
   * Prometheus computes as rate() over `windowS` of the requests counter.
   */
  rate?: { target: number; windowS: number }
  behavior: Behavior
  /** KEDA: seconds between the operator's polls; with useCachedMetrics also the age of what the HPA reads. */
  pollingIntervalS?: number
  /** KEDA: only for scaling to zero, i.e. with minReplicas 0. */
  cooldownPeriodS?: number
  useCachedMetrics?: boolean
  fallback?: { failureThreshold: number; replicas: number }
}

const RENDERED = fileURLToPath(new URL('../../infra/k8s/rendered/', import.meta.url))
export const KEDA_MANIFEST = `${RENDERED}autoscaling-keda.yaml`
export const HPA_MANIFEST = `${RENDERED}autoscaling-hpa.yaml`
export const BASE_MANIFEST = `${RENDERED}base.yaml`

/** KEDA's defaults for fields a ScaledObject leaves out (keda.sh/docs/latest/reference/scaledobject-spec). */
const KEDA_DEFAULTS = { pollingInterval: 30, cooldownPeriod: 300, minReplicaCount: 0, maxReplicaCount: 100 }

/** The HPA controller's defaults (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale, "Default Behavior"). */
const DEFAULT_BEHAVIOR: Behavior = {
  scaleUp: {
    stabilizationWindowSeconds: 0,
    selectPolicy: 'Max',
    policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }, { type: 'Pods', value: 4, periodSeconds: 15 }],
  },
  scaleDown: { stabilizationWindowSeconds: 300, selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] },
}

type Yaml = Record<string, unknown>

const object = (value: unknown, where: string): Yaml => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where}: expected a mapping`)
  return value as Yaml
}
const optionalObject = (value: unknown, where: string): Yaml | undefined => (value === undefined ? undefined : object(value, where))
const number = (value: unknown, where: string): number => {
  const n = typeof value === 'string' ? Number(value) : value
  if (typeof n !== 'number' || !Number.isFinite(n)) throw new Error(`${where}: expected a number, got ${JSON.stringify(value)}`)
  return n
}

const rules = (value: unknown, fallback: ScalingRules, where: string): ScalingRules => {
  const r = optionalObject(value, where)
  if (!r) return fallback
  const policies = r.policies === undefined
    ? fallback.policies
    : (r.policies as unknown[]).map((p, i): ScalingPolicy => {
        const policy = object(p, `${where}.policies[${i}]`)
        const type = policy.type
        if (type !== 'Pods' && type !== 'Percent') throw new Error(`${where}.policies[${i}].type: ${String(type)}`)
        return { type, value: number(policy.value, `${where}.policies[${i}].value`), periodSeconds: number(policy.periodSeconds, `${where}.policies[${i}].periodSeconds`) }
      })
  const selectPolicy = r.selectPolicy ?? fallback.selectPolicy
  if (selectPolicy !== 'Max' && selectPolicy !== 'Min' && selectPolicy !== 'Disabled') throw new Error(`${where}.selectPolicy: ${String(selectPolicy)}`)
  return {
    stabilizationWindowSeconds: r.stabilizationWindowSeconds === undefined ? fallback.stabilizationWindowSeconds : number(r.stabilizationWindowSeconds, `${where}.stabilizationWindowSeconds`),
    selectPolicy,
    policies,
  }
}

const behaviorOf = (value: unknown, where: string): Behavior => {
  const b = optionalObject(value, where)
  return {
    scaleUp: rules(b?.scaleUp, DEFAULT_BEHAVIOR.scaleUp, `${where}.scaleUp`),
    scaleDown: rules(b?.scaleDown, DEFAULT_BEHAVIOR.scaleDown, `${where}.scaleDown`),
  }
}

const documentOfKind = (file: string, kind: string): Yaml => {
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as unknown)
  const found = docs.find((d) => typeof d === 'object' && d !== null && (d as Yaml).kind === kind)
  if (!found) throw new Error(`${file}: no ${kind}`)
  return found as Yaml
}

/** rate()'s range in seconds, from a PromQL query or an adapter rule. */
const rateWindowS = (query: string, where: string): number => {
  const match = /\[(\d+)s\]/.exec(query)
  if (!match) throw new Error(`${where}: the rate's range is not in seconds: ${query}`)
  return Number(match[1])
}


/** The per-pod metric prometheus-adapter derives from the requests counter (its `_total` → `_per_second` rule). */
const REQUEST_RATE_METRIC = BACKEND_METRICS.requests.replace(/_total$/, '_per_second')
/** The annotation on the HPA with the prometheus-adapter rules it depends on. */
const ADAPTER_RULES_ANNOTATION = 'edge-infer/prometheus-adapter-rules'

/** The range of the adapter rule's rate() for the requests counter. */
const adapterRateWindowS = (hpa: Yaml, file: string): number => {
  const annotations = optionalObject(object(hpa.metadata, 'metadata').annotations, 'metadata.annotations')
  const rules = JSON.parse(String(annotations?.[ADAPTER_RULES_ANNOTATION] ?? '[]')) as Array<{ seriesQuery?: string; metricsQuery?: string }>
  const rule = rules.find((r) => r.seriesQuery?.startsWith(`${BACKEND_METRICS.requests}{`))
  if (!rule?.metricsQuery) throw new Error(`${file}: no prometheus-adapter rule for ${BACKEND_METRICS.requests} in the ${ADAPTER_RULES_ANNOTATION} annotation`)
  return rateWindowS(rule.metricsQuery, `metadata.annotations.${ADAPTER_RULES_ANNOTATION}`)
}

/** The annotation on both autoscalers with the replica capacity their rate target is a share of. */
const REPLICA_CAPACITY_ANNOTATION = 'edge-infer/replica-capacity-rows-per-second'

/**
 * One replica's capacity in rows/s, as the rendered autoscaler states it (infra/k8s/sizing.ts sizes
 * the rate target from it): the simulated replica is given the same figure, so the trigger and the
 * replica it scales cannot disagree about what a pod drains.
 */
export const readReplicaCapacity = (file = KEDA_MANIFEST): number => {
  const doc = documentOfKind(file, 'ScaledObject')
  const annotations = optionalObject(object(doc.metadata, 'metadata').annotations, 'metadata.annotations')
  const value = annotations?.[REPLICA_CAPACITY_ANNOTATION]
  if (value === undefined) throw new Error(`${file}: no ${REPLICA_CAPACITY_ANNOTATION} annotation`)
  const capacity = number(value, `metadata.annotations.${REPLICA_CAPACITY_ANNOTATION}`)
  if (capacity <= 0) throw new Error(`${file}: ${REPLICA_CAPACITY_ANNOTATION} must be positive, got ${capacity}`)
  return capacity
}

/** The ScaledObject's scaling parameters, with KEDA's and the HPA's defaults where it names none. */
export const readScaledObject = (file = KEDA_MANIFEST): AutoscalerConfig => {
  const spec = object(documentOfKind(file, 'ScaledObject').spec, 'spec')
  const triggers = spec.triggers as unknown[]
  if (!Array.isArray(triggers) || triggers.length === 0) throw new Error(`${file}: no triggers`)
  let target: number | undefined
  let rate: AutoscalerConfig['rate']
  let useCachedMetrics = false
  triggers.forEach((t, i) => {
    const where = `spec.triggers[${i}]`
    const trigger = object(t, where)
    if (trigger.metricType !== 'AverageValue') throw new Error(`${file}: ${where} metricType ${String(trigger.metricType)}; the simulator models AverageValue`)
    const metadata = object(trigger.metadata, `${where}.metadata`)
    const query = String(metadata.query)
    const threshold = number(metadata.threshold, `${where}.metadata.threshold`)
    useCachedMetrics ||= trigger.useCachedMetrics === true
    if (query.includes(BACKEND_METRICS.queueDepth)) target = threshold
    else if (query.includes(`rate(${BACKEND_METRICS.requests}`)) rate = { target: threshold, windowS: rateWindowS(query, `${where}.metadata.query`) }
    else throw new Error(`${file}: ${where}: the simulator models the queue-depth gauge and the request rate, not ${query}`)
  })
  if (target === undefined) throw new Error(`${file}: no queue-depth trigger`)
  const fallback = optionalObject(spec.fallback, 'spec.fallback')
  const advanced = optionalObject(spec.advanced, 'spec.advanced')
  const hpaConfig = optionalObject(advanced?.horizontalPodAutoscalerConfig, 'spec.advanced.horizontalPodAutoscalerConfig')
  return {
    source: 'keda',
    minReplicas: number(spec.minReplicaCount ?? KEDA_DEFAULTS.minReplicaCount, 'spec.minReplicaCount'),
    maxReplicas: number(spec.maxReplicaCount ?? KEDA_DEFAULTS.maxReplicaCount, 'spec.maxReplicaCount'),
    target,
    ...(rate ? { rate } : {}),
    behavior: behaviorOf(hpaConfig?.behavior, 'spec.advanced.horizontalPodAutoscalerConfig.behavior'),
    pollingIntervalS: number(spec.pollingInterval ?? KEDA_DEFAULTS.pollingInterval, 'spec.pollingInterval'),
    cooldownPeriodS: number(spec.cooldownPeriod ?? KEDA_DEFAULTS.cooldownPeriod, 'spec.cooldownPeriod'),
    useCachedMetrics,
    ...(fallback ? { fallback: { failureThreshold: number(fallback.failureThreshold, 'spec.fallback.failureThreshold'), replicas: number(fallback.replicas, 'spec.fallback.replicas') } } : {}),
  }
}

/** The HPA-only variant: Pods metrics with AverageValue targets, the queue-depth gauge and optionally the request rate. */
export const readHorizontalPodAutoscaler = (file = HPA_MANIFEST): AutoscalerConfig => {
  const hpa = documentOfKind(file, 'HorizontalPodAutoscaler')
  const spec = object(hpa.spec, 'spec')
  const metrics = spec.metrics as unknown[]
  if (!Array.isArray(metrics) || metrics.length === 0) throw new Error(`${file}: no metrics`)
  let target: number | undefined
  let rate: AutoscalerConfig['rate']
  metrics.forEach((m, i) => {
    const where = `spec.metrics[${i}].pods`
    const pods = object(object(m, `spec.metrics[${i}]`).pods, where)
    const name = String(object(pods.metric, `${where}.metric`).name)
    const t = object(pods.target, `${where}.target`)
    if (t.type !== 'AverageValue') throw new Error(`${file}: ${where} target type ${String(t.type)}; the simulator models AverageValue`)
    const value = number(t.averageValue, `${where}.target.averageValue`)
    if (name === BACKEND_METRICS.queueDepth) target = value
    else if (name === REQUEST_RATE_METRIC) rate = { target: value, windowS: adapterRateWindowS(hpa, file) }
    else throw new Error(`${file}: ${where}: the simulator models ${BACKEND_METRICS.queueDepth} and ${REQUEST_RATE_METRIC}, not ${name}`)
  })
  if (target === undefined) throw new Error(`${file}: no queue-depth metric`)
  return {
    source: 'hpa',
    minReplicas: number(spec.minReplicas ?? 1, 'spec.minReplicas'),
    maxReplicas: number(spec.maxReplicas, 'spec.maxReplicas'),
    target,
    ...(rate ? { rate } : {}),
    behavior: behaviorOf(spec.behavior, 'spec.behavior'),
  }
}

/** Seconds between Prometheus scrapes of the backend: the ServiceMonitor's endpoint interval. */
export const readScrapeIntervalS = (file = BASE_MANIFEST): number => {
  const spec = object(documentOfKind(file, 'ServiceMonitor').spec, 'spec')
  const endpoint = object((spec.endpoints as unknown[])[0], 'spec.endpoints[0]')
  const match = /^(\d+)s$/.exec(String(endpoint.interval))
  if (!match) throw new Error(`${file}: ServiceMonitor interval ${String(endpoint.interval)} is not in seconds`)
  return Number(match[1])
}
