import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

const PREFIX = 'edge_infer_backend_'

/** Seconds buckets from 100 µs to 10 s: batching decisions live at the low end. */
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export interface QueueDepthSource {
  /** Current rows waiting + running per model version. */
  depths(): Array<{ model: string; version: string; depth: number }>
}

/** The backend's Prometheus metrics, on a registry of its own (several servers can share a process in tests). */
export const createMetrics = (queue: QueueDepthSource) => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: PREFIX })
  const versioned = ['model', 'version'] as const
  return {
    registry,
    requests: new Counter({ name: `${PREFIX}requests_total`, help: 'Inference requests by outcome', labelNames: [...versioned, 'status'], registers: [registry] }),
    requestDuration: new Histogram({ name: `${PREFIX}request_duration_seconds`, help: 'Infer request time from parsed body to response', labelNames: versioned, buckets: LATENCY_BUCKETS, registers: [registry] }),
    queueDuration: new Histogram({ name: `${PREFIX}queue_duration_seconds`, help: 'Time a request waited for its batch', labelNames: versioned, buckets: LATENCY_BUCKETS, registers: [registry] }),
    computeDuration: new Histogram({ name: `${PREFIX}compute_duration_seconds`, help: 'session.run time per batch', labelNames: versioned, buckets: LATENCY_BUCKETS, registers: [registry] }),
    batchSize: new Histogram({ name: `${PREFIX}batch_size_rows`, help: 'Rows per executed batch', labelNames: versioned, buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], registers: [registry] }),
    batches: new Counter({ name: `${PREFIX}batches_total`, help: 'Executed batches by why they were sent', labelNames: [...versioned, 'reason'], registers: [registry] }),
    rejected: new Counter({ name: `${PREFIX}rejected_requests_total`, help: 'Requests refused or dropped, by reason', labelNames: ['model', 'reason'], registers: [registry] }),
    modelLoadDuration: new Histogram({ name: `${PREFIX}model_load_duration_seconds`, help: 'Load plus warm-up time per model version', labelNames: versioned, buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [registry] }),
    modelsLoaded: new Gauge({ name: `${PREFIX}models_loaded`, help: 'Model versions ready and serving', registers: [registry] }),
    executionProvider: new Gauge({ name: `${PREFIX}execution_provider_info`, help: 'Active execution provider per model version (value 1)', labelNames: [...versioned, 'provider'], registers: [registry] }),
    queueDepth: new Gauge({
      name: `${PREFIX}queue_depth_rows`,
      help: 'Rows waiting plus running per model version: the autoscaling signal',
      labelNames: versioned,
      registers: [registry],
      collect() {
        this.reset()
        for (const { model, version, depth } of queue.depths()) this.set({ model, version }, depth)
      },
    }),
    queueDepthTotal: new Gauge({
      name: `${PREFIX}queue_depth_rows_total`,
      help: 'Rows waiting plus running over all models',
      registers: [registry],
      collect() {
        this.set(queue.depths().reduce((n, d) => n + d.depth, 0))
      },
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
