import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'

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

/** The ScaledObject's scaling parameters, with KEDA's and the HPA's defaults where it names none. */
export const readScaledObject = (file = KEDA_MANIFEST): AutoscalerConfig => {
  const spec = object(documentOfKind(file, 'ScaledObject').spec, 'spec')
  const triggers = spec.triggers as unknown[]
  if (!Array.isArray(triggers) || triggers.length !== 1) throw new Error(`${file}: the simulator models exactly one trigger`)
  const trigger = object(triggers[0], 'spec.triggers[0]')
  if (trigger.metricType !== 'AverageValue') throw new Error(`${file}: trigger metricType ${String(trigger.metricType)}; the simulator models AverageValue`)
  const metadata = object(trigger.metadata, 'spec.triggers[0].metadata')
  const fallback = optionalObject(spec.fallback, 'spec.fallback')
  const advanced = optionalObject(spec.advanced, 'spec.advanced')
  const hpaConfig = optionalObject(advanced?.horizontalPodAutoscalerConfig, 'spec.advanced.horizontalPodAutoscalerConfig')
  return {
    source: 'keda',
    minReplicas: number(spec.minReplicaCount ?? KEDA_DEFAULTS.minReplicaCount, 'spec.minReplicaCount'),
    maxReplicas: number(spec.maxReplicaCount ?? KEDA_DEFAULTS.maxReplicaCount, 'spec.maxReplicaCount'),
    target: number(metadata.threshold, 'spec.triggers[0].metadata.threshold'),
    behavior: behaviorOf(hpaConfig?.behavior, 'spec.advanced.horizontalPodAutoscalerConfig.behavior'),
    pollingIntervalS: number(spec.pollingInterval ?? KEDA_DEFAULTS.pollingInterval, 'spec.pollingInterval'),
    cooldownPeriodS: number(spec.cooldownPeriod ?? KEDA_DEFAULTS.cooldownPeriod, 'spec.cooldownPeriod'),
    useCachedMetrics: trigger.useCachedMetrics === true,
    ...(fallback ? { fallback: { failureThreshold: number(fallback.failureThreshold, 'spec.fallback.failureThreshold'), replicas: number(fallback.replicas, 'spec.fallback.replicas') } } : {}),
  }
}

/** The HPA-only variant: one Pods metric with an AverageValue target. */
export const readHorizontalPodAutoscaler = (file = HPA_MANIFEST): AutoscalerConfig => {
  const spec = object(documentOfKind(file, 'HorizontalPodAutoscaler').spec, 'spec')
  const metrics = spec.metrics as unknown[]
  if (!Array.isArray(metrics) || metrics.length !== 1) throw new Error(`${file}: the simulator models exactly one metric`)
  const target = object(object(object(metrics[0], 'spec.metrics[0]').pods, 'spec.metrics[0].pods').target, 'spec.metrics[0].pods.target')
  if (target.type !== 'AverageValue') throw new Error(`${file}: target type ${String(target.type)}; the simulator models AverageValue`)
  return {
    source: 'hpa',
    minReplicas: number(spec.minReplicas ?? 1, 'spec.minReplicas'),
    maxReplicas: number(spec.maxReplicas, 'spec.maxReplicas'),
    target: number(target.averageValue, 'spec.metrics[0].pods.target.averageValue'),
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
