import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { BACKEND_METRIC_PREFIX as PREFIX, BACKEND_METRICS as NAMES } from '../../shared/backend-metrics.ts'
import type { Verdict } from '../../shared/drift/report.ts'
import type { DistributionDrift, DriftReport } from './drift/report.ts'
import { TallyCounter, TallyHistogram } from './tally.ts'

/** Window of the drift gauges. */
export const DRIFT_GAUGE_MINUTES = 15

/** Rows per batch. */
export const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]

/** Seconds buckets from 100 µs to 10 s: batching decisions live at the low end. */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

export interface QueueDepthSource {
  /** Current rows waiting + running per model version. */
  depths(): Array<{ model: string; version: string; depth: number }>
  /** Rows each serving version's queue takes at most (its `max_queue_size`). */
  capacities?: () => Array<{ model: string; version: string; rows: number }>
  /** Whether `/v2/health/ready` would answer ready now. */
  ready?: () => boolean
  /** Drift reports of the monitored versions over the gauges' window. */
  driftReports?: () => Promise<DriftReport[]>
}

const VERDICT_VALUE: Record<Verdict, number> = { insufficient: -1, ok: 0, warning: 1, critical: 2 }
/** The `feature` label of the prediction histogram's series. */
export const PREDICTION_SERIES = '__prediction__'

/** The backend's Prometheus metrics, on a registry of its own (several servers can share a process in tests). */
export const createMetrics = (queue: QueueDepthSource) => {
  const registry = new Registry()
  // One computation per scrape serves all drift gauges (they are collected one after another).
  let reports: { at: number; value: Promise<DriftReport[]> } | undefined
  const driftReports = (): Promise<DriftReport[]> => {
    if (!reports || Date.now() - reports.at > 1_000) reports = { at: Date.now(), value: queue.driftReports?.() ?? Promise.resolve([]) }
    return reports.value
  }
  const driftGauge = (name: string, help: string, value: (d: DistributionDrift) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['model', 'version', 'feature'],
      registers: [registry],
      async collect() {
        this.reset()
        for (const r of await driftReports()) {
          const version = String(r.version)
          for (const f of r.features) this.set({ model: r.model, version, feature: f.name }, value(f))
          this.set({ model: r.model, version, feature: PREDICTION_SERIES }, value(r.prediction))
        }
      },
    })
  collectDefaultMetrics({ register: registry, prefix: PREFIX })
  // prom-client names these gauges like counters (promtool refuses them); the same counts stay
  // per type in nodejs_active_{handles,requests,resources}, and sum() of those is the total.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(`${PREFIX}${name}`)
  const versioned = ['model', 'version'] as const
  // Counted per request or per batch: tallies, bound once per series (see tally.ts).
  const hot = {
    requests: new TallyCounter(NAMES.requests, 'Inference requests by outcome', [...versioned, 'status']),
    requestDuration: new TallyHistogram(NAMES.requestDuration, 'Infer request time from parsed body to response', versioned, LATENCY_BUCKETS),
    queueDuration: new TallyHistogram(NAMES.queueDuration, 'Time a request waited for its batch', versioned, LATENCY_BUCKETS),
    computeDuration: new TallyHistogram(NAMES.computeDuration, 'session.run time per batch', versioned, LATENCY_BUCKETS),
    batchSize: new TallyHistogram(NAMES.batchSize, 'Rows per executed batch', versioned, BATCH_SIZE_BUCKETS),
    batches: new TallyCounter(NAMES.batches, 'Executed batches by why they were sent', [...versioned, 'reason']),
  }
  return {
    registry,
    ...hot,
    /** The Prometheus text of everything: the registry's metrics, then the tallies. */
    async exposition(): Promise<string> {
      return `${await registry.metrics()}\n${Object.values(hot).map((t) => t.render()).join('\n\n')}\n`
    },
    rejected: new Counter({ name: NAMES.rejected, help: 'Requests refused or dropped, by reason', labelNames: ['model', 'reason'], registers: [registry] }),
    modelLoadDuration: new Histogram({ name: NAMES.modelLoadDuration, help: 'Load plus warm-up time per model version', labelNames: versioned, buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [registry] }),
    modelsLoaded: new Gauge({ name: NAMES.modelsLoaded, help: 'Model versions ready and serving', registers: [registry] }),
    executionProvider: new Gauge({ name: NAMES.executionProvider, help: 'Active execution provider per model version (value 1)', labelNames: [...versioned, 'provider'], registers: [registry] }),
    versionBroken: new Gauge({ name: NAMES.versionBroken, help: '1 while a model version has no inference instance left and is retried with backoff (readiness is off for a pinned model)', labelNames: versioned, registers: [registry] }),
    queueDepth: new Gauge({
      name: NAMES.queueDepth,
      help: 'Rows waiting plus running per model version: the autoscaling signal',
      labelNames: versioned,
      registers: [registry],
      collect() {
        this.reset()
        for (const { model, version, depth } of queue.depths()) this.set({ model, version }, depth)
      },
    }),
    driftPsi: driftGauge(NAMES.driftPsi, `PSI of the last ${DRIFT_GAUGE_MINUTES} min against the baseline, per feature (feature="${PREDICTION_SERIES}": the prediction histogram)`, (d) => d.psi),
    driftVerdict: driftGauge(NAMES.driftVerdict, 'Drift verdict of the window: -1 insufficient, 0 ok, 1 warning, 2 critical', (d) => VERDICT_VALUE[d.verdict]),
    driftAlerting: driftGauge(NAMES.driftAlerting, '1 while the 3-window alert rule is raised', (d) => (d.alerting ? 1 : 0)),
    driftDatasetVerdict: new Gauge({
      name: NAMES.driftDatasetVerdict,
      help: 'Dataset drift verdict per model version: -1 insufficient, 0 ok, 1 warning, 2 critical',
      labelNames: versioned,
      registers: [registry],
      async collect() {
        this.reset()
        for (const r of await driftReports()) this.set({ model: r.model, version: String(r.version) }, VERDICT_VALUE[r.dataset.verdict])
      },
    }),
    queueCapacity: new Gauge({
      name: NAMES.queueCapacity,
      help: 'Rows a model version\'s queue takes at most (max_queue_size): beyond it requests are refused with 429',
      labelNames: versioned,
      registers: [registry],
      collect() {
        this.reset()
        for (const { model, version, rows } of queue.capacities?.() ?? []) this.set({ model, version }, rows)
      },
    }),
    ready: new Gauge({
      name: NAMES.ready,
      help: '1 while /v2/health/ready answers ready (every pinned model serving, not shutting down), else 0',
      registers: [registry],
      collect() {
        this.set(queue.ready?.() ? 1 : 0)
      },
    }),
    // A gauge may not end in _total (promtool); this one keeps a series at 0 when no version is loaded.
    queueDepthAll: new Gauge({
      name: NAMES.queueDepthAll,
      help: 'Rows waiting plus running over all models',
      registers: [registry],
      collect() {
        this.set(queue.depths().reduce((n, d) => n + d.depth, 0))
      },
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>

type VersionLabels = { model: string; version: string }

/** A counter's series per value of its last label, bound when first counted. */
const boundBy = (counter: TallyCounter, labels: VersionLabels, name: string): ((value: string) => void) => {
  const bound = new Map<string, (by?: number) => void>()
  return (value) => {
    let count = bound.get(value)
    if (!count) bound.set(value, (count = counter.bind({ ...labels, [name]: value })))
    count()
  }
}

/** One version's per-request series. */
export const requestSeries = (metrics: Metrics, labels: VersionLabels) => ({
  ok: metrics.requests.bind({ ...labels, status: '200' }),
  status: boundBy(metrics.requests, labels, 'status'),
  duration: metrics.requestDuration.bind(labels),
  invalid: () => metrics.rejected.inc({ model: labels.model, reason: 'invalid_request' }),
})

export type RequestSeries = ReturnType<typeof requestSeries>

/** One version's per-batch series. */
export const batchSeries = (metrics: Metrics, labels: VersionLabels) => ({
  reason: boundBy(metrics.batches, labels, 'reason'),
  size: metrics.batchSize.bind(labels),
  computeDuration: metrics.computeDuration.bind(labels),
  queueDuration: metrics.queueDuration.bind(labels),
})
