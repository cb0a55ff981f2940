import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject'
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler'
import type { IHorizontalPodAutoscalerBehavior } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscalerBehavior'
import { QUEUE_DEPTH_METRIC, type ClusterConfig } from './config.ts'
import { TARGET_ROWS_PER_REPLICA } from './sizing.ts'

/** Rows waiting and running over every pod of the Service (labels the ServiceMonitor's scrape adds). */
export const queueDepthQuery = (c: ClusterConfig): string => `sum(${QUEUE_DEPTH_METRIC}{namespace="${c.namespace}",service="${c.name}"})`

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
const meta = (c: ClusterConfig) => ({ name: c.name, namespace: c.namespace, labels: { 'app.kubernetes.io/name': c.name, 'app.kubernetes.io/part-of': 'edge-infer' } })

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
      triggers: [{
        type: 'prometheus',
        name: 'queue-depth',
        // AverageValue: the HPA divides the sum by the replica count and compares with the per-replica target.
        metricType: 'AverageValue',
        metadata: {
          serverAddress: c.prometheusUrl,
          query: queueDepthQuery(c),
          threshold: String(TARGET_ROWS_PER_REPLICA),
          // An empty answer (no version loaded yet) reads as 0, not as an error that trips the fallback.
          ignoreNullValues: 'true',
        },
      }],
    },
  })

/**
 * For clusters without KEDA: the same signal through prometheus-adapter, which must expose the
 * gauge as a per-pod custom metric, e.g. the rule
 *   seriesQuery: 'edge_infer_backend_queue_depth_rows{namespace!="",pod!=""}'
 *   resources: { overrides: { namespace: { resource: namespace }, pod: { resource: pod } } }
 *   metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
 * The Pods metric's average over pods is KEDA's sum divided by replicas: the same target. No
 * fallback here: without the adapter the HPA keeps the current replica count.
 */
export const horizontalPodAutoscaler = (c: ClusterConfig) =>
  new HorizontalPodAutoscaler({
    metadata: meta(c),
    spec: {
      scaleTargetRef: scaleTarget(c),
      minReplicas: c.minReplicas,
      maxReplicas: c.maxReplicas,
      behavior,
      metrics: [{
        type: 'Pods',
        pods: {
          metric: { name: QUEUE_DEPTH_METRIC },
          target: { type: 'AverageValue', averageValue: String(TARGET_ROWS_PER_REPLICA) },
        },
      }],
    },
  })
