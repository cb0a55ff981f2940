import { NORMALIZATION_FIXES_METRIC, NORMALIZED_METRIC } from '../../edge/exposition/normalization.ts'
import { qualityGauge } from '../../edge/exposition/quality.ts'
import { DECISIONS_METRIC, DURATION_METRIC, REQUESTS_METRIC, WEIGHT_METRIC } from '../../edge/exposition/requests.ts'
import { SHADOW_AGREEING_METRIC, SHADOW_DIFF_METRIC, SHADOW_ROWS_METRIC } from '../../edge/exposition/shadow.ts'

/**
 * Where the series the rules and the dashboard read come from, beyond the backend's own
 * registry (backend/monitor/metrics.ts), which the tests read from a running backend.
 */

/** The edge worker's `/metrics` (admin key): request counts and latency per variant, rollout state, input normalization, shadow comparison. */
export const EDGE_METRICS = [
  REQUESTS_METRIC,
  DURATION_METRIC,
  WEIGHT_METRIC,
  DECISIONS_METRIC,
  NORMALIZED_METRIC,
  NORMALIZATION_FIXES_METRIC,
  SHADOW_ROWS_METRIC,
  SHADOW_AGREEING_METRIC,
  SHADOW_DIFF_METRIC,
] as const

/** The edge's quality gauges the rules read: exposed per version only once it has enough labels (edge/exposition/quality.ts). */
export const EDGE_QUALITY_METRICS = [qualityGauge('realized', 'accuracy'), qualityGauge('estimated', 'accuracy'), qualityGauge('realized', 'labels')] as const

/** Series no part of edge-infer exports, and who does. */
export const EXTERNAL_METRICS: Record<string, string> = {
  up: 'Prometheus, per scrape target',
  kube_deployment_status_replicas_available: 'kube-state-metrics',
  kube_horizontalpodautoscaler_status_desired_replicas: 'kube-state-metrics (the HPA KEDA creates is named after the ScaledObject)',
}
