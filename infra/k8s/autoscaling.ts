import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import type { IHorizontalPodAutoscalerBehavior } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscalerBehavior'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { QUEUE_DEPTH_METRIC, type ClusterConfig } from './config.ts'
import { MEASURED, TARGET_REQUESTS_PER_SECOND_PER_REPLICA, TARGET_ROWS_PER_REPLICA } from './sizing.ts'

const serviceSelector = (c: ClusterConfig): string => `{namespace="${c.namespace}",service="${c.name}"}`

/** Rows waiting and running over every pod of the Service (labels the ServiceMonitor's scrape adds). */
export const queueDepthQuery = (c: ClusterConfig): string => `sum(${QUEUE_DEPTH_METRIC}${serviceSelector(c)})`

/**
 * rate()'s range: three scrapes at the ServiceMonitor's 10 s interval, the shortest range that
 * still has a sample to spare when one scrape is late, so the rate follows a spike within ~20 s.
 */
export const REQUEST_RATE_WINDOW_S = 30

/** Inference requests per second arriving over every pod of the Service, refused ones included (they are demand too). */
export const requestRateQuery = (c: ClusterConfig): string =>
  `sum(rate(${BACKEND_METRICS.requests}${serviceSelector(c)}[${REQUEST_RATE_WINDOW_S}s]))`

/** The per-pod rate prometheus-adapter derives from the counter (its `_total` → `_per_second` naming rule). */
export const REQUEST_RATE_METRIC = BACKEND_METRICS.requests.replace(/_total$/, '_per_second')

/**
 * Up at once (a queue only grows while capacity is short; a GPU pod takes a minute to be warm),
 * down slowly (one pod a minute after 5 min of lower demand: warm GPUs are expensive to regain).
 */
export const behavior: IHorizontalPodAutoscalerBehavior = {
  scaleUp: {
    stabilizationWindowSeconds: 0,
    selectPolicy: 'Max',
    policies: [
      { type: 'Percent', value: 100, periodSeconds: 15 },
      { type: 'Pods', value: 4, periodSeconds: 15 },
    ],
  },
  scaleDown: {
    stabilizationWindowSeconds: 300,
    selectPolicy: 'Min',
    policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }],
  },
}

const scaleTarget = (c: ClusterConfig) => ({ apiVersion: 'apps/v1', kind: 'Deployment', name: c.name })

/**
 * The replica capacity the rate target is a share of, on both autoscalers: says what the threshold
 * was sized from, and is where the autoscaling simulator takes its replica's capacity from (one
 * figure for the trigger and the simulated replica).
 */
export const REPLICA_CAPACITY_ANNOTATION = 'edge-infer/replica-capacity-rows-per-second'

const meta = (c: ClusterConfig) => ({
  name: c.name,
  namespace: c.namespace,
  labels: { 'app.kubernetes.io/name': c.name, 'app.kubernetes.io/part-of': 'edge-infer' },
  annotations: { [REPLICA_CAPACITY_ANNOTATION]: String(MEASURED.replicaRowsPerSecond) },
})

const prometheusTrigger = (c: ClusterConfig, name: string, query: string, threshold: number) => ({
  type: 'prometheus',
  name,
  // AverageValue: the HPA divides the sum by the replica count and compares with the per-replica target.
  metricType: 'AverageValue' as const,
  metadata: {
    serverAddress: c.prometheusUrl,
    query,
    threshold: String(threshold),
    // A lost target must not read as 0 (replicas would sink to min): an empty answer is an error,
    // and after fallback.failureThreshold of them KEDA holds fallback.replicas.
    ignoreNullValues: 'false',
  },
})

export const scaledObject = (c: ClusterConfig) =>
  new ScaledObject({
    metadata: meta(c),
    spec: {
      scaleTargetRef: scaleTarget(c),
      minReplicaCount: c.minReplicas,
      maxReplicaCount: c.maxReplicas,
      pollingInterval: 10,
      // Prometheus unreachable for 3 polls: hold enough replicas for a normal day rather than guess.
      fallback: { failureThreshold: 3, replicas: c.fallbackReplicas },
      advanced: { horizontalPodAutoscalerConfig: { name: c.name, behavior } },
      // KEDA hands both to one HPA, which scales to the larger of the two recommendations.
      triggers: [
        prometheusTrigger(c, 'queue-depth', queueDepthQuery(c), TARGET_ROWS_PER_REPLICA),
        // Leading: arrivals rise before a replica saturates, queue depth only after.
        prometheusTrigger(c, 'request-rate', requestRateQuery(c), TARGET_REQUESTS_PER_SECOND_PER_REPLICA),
      ],
    },
  })

/**
 * For clusters without KEDA: the same signals through prometheus-adapter, which must expose them as
 * per-pod custom metrics with these rules (its `rules.custom`; rendered on the HPA as an annotation
 * so the manifest says what it depends on, and the simulator reads the rate's range from it). The
 * Pods metric's average over pods is KEDA's sum divided by replicas: the same targets. No fallback
 * here: without the adapter the HPA keeps the current replica count.
 */
export const adapterRules = [
  {
    seriesQuery: `${QUEUE_DEPTH_METRIC}{namespace!="",pod!=""}`,
    resources: { overrides: { namespace: { resource: 'namespace' }, pod: { resource: 'pod' } } },
    metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)',
  },
  {
    seriesQuery: `${BACKEND_METRICS.requests}{namespace!="",pod!=""}`,
    resources: { overrides: { namespace: { resource: 'namespace' }, pod: { resource: 'pod' } } },
    name: { matches: '^(.*)_total$', as: '${1}_per_second' },
    metricsQuery: `sum(rate(<<.Series>>{<<.LabelMatchers>>}[${REQUEST_RATE_WINDOW_S}s])) by (<<.GroupBy>>)`,
  },
]

export const ADAPTER_RULES_ANNOTATION = 'edge-infer/prometheus-adapter-rules'

const podsMetric = (name: string, target: number) => ({
  type: 'Pods' as const,
  pods: { metric: { name }, target: { type: 'AverageValue' as const, averageValue: String(target) } },
})

export const horizontalPodAutoscaler = (c: ClusterConfig) =>
  new HorizontalPodAutoscaler({
    metadata: { ...meta(c), annotations: { [ADAPTER_RULES_ANNOTATION]: JSON.stringify(adapterRules), ...meta(c).annotations } },
    spec: {
      scaleTargetRef: scaleTarget(c),
      minReplicas: c.minReplicas,
      maxReplicas: c.maxReplicas,
      behavior,
      metrics: [
        podsMetric(QUEUE_DEPTH_METRIC, TARGET_ROWS_PER_REPLICA),
        podsMetric(REQUEST_RATE_METRIC, TARGET_REQUESTS_PER_SECOND_PER_REPLICA),
      ],
    },
  })
