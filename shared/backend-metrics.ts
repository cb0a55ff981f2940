/** What the backend's metric names start with, its default process and Node.js metrics included. */
export const BACKEND_METRIC_PREFIX = 'edge_infer_backend_'

/**
 * The name of every metric the backend exports besides the default process and Node.js ones, by
 * its key in `createMetrics` (backend/monitor/metrics.ts). Here, not there, because the edge's
 * console, the manifests, the rules and dashboards and the load tools read them too.
 */
export const BACKEND_METRICS = {
  requests: 'edge_infer_backend_requests_total',
  requestDuration: 'edge_infer_backend_request_duration_seconds',
  queueDuration: 'edge_infer_backend_queue_duration_seconds',
  computeDuration: 'edge_infer_backend_compute_duration_seconds',
  batchSize: 'edge_infer_backend_batch_size_rows',
  batches: 'edge_infer_backend_batches_total',
  rejected: 'edge_infer_backend_rejected_requests_total',
  modelLoadDuration: 'edge_infer_backend_model_load_duration_seconds',
  modelsLoaded: 'edge_infer_backend_models_loaded',
  executionProvider: 'edge_infer_backend_execution_provider_info',
  versionBroken: 'edge_infer_backend_model_version_broken',
  queueDepth: 'edge_infer_backend_queue_depth_rows',
  driftPsi: 'edge_infer_backend_drift_psi',
  driftVerdict: 'edge_infer_backend_drift_verdict',
  driftAlerting: 'edge_infer_backend_drift_alerting',
  driftDatasetVerdict: 'edge_infer_backend_drift_dataset_verdict',
  queueCapacity: 'edge_infer_backend_queue_capacity_rows',
  ready: 'edge_infer_backend_ready',
  queueDepthAll: 'edge_infer_backend_queue_depth_all_rows',
} as const satisfies Record<string, `${typeof BACKEND_METRIC_PREFIX}${string}`>
