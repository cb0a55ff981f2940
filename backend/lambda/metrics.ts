import { metrics, type Attributes, type Counter, type Histogram } from '@opentelemetry/api'
import { BACKEND_METRICS as NAMES } from '../../shared/backend-metrics.ts'
import type { InferAnswer } from '../infer/response.ts'
import { BATCH_SIZE_BUCKETS, LATENCY_BUCKETS } from '../monitor/metrics.ts'

/** The attribute that tells the Lambda tier's series from the HTTP tier's (scraped) ones. */
export const SERVED_BY_LAMBDA = { served_by: 'lambda' } as const

/**
 * The HTTP tier's per-request and per-batch series, under the same names (shared/backend-metrics.ts)
 * and buckets, counted by the Lambda tier and pushed as OTLP metrics: nothing scrapes a Lambda.
 * Each instance's sums are cumulative (Prometheus takes them as counters of one more instance;
 * `sum` over `served_by` and the instance labels joins the tiers). With no meter provider
 * registered (OTLP off, the default) every instrument is the API's no-op.
 */
export class LambdaMetrics {
  private readonly requests: Counter
  private readonly rejected: Counter
  private readonly batches: Counter
  private readonly requestDuration: Histogram
  private readonly queueDuration: Histogram
  private readonly computeDuration: Histogram
  private readonly batchSize: Histogram

  constructor() {
    const meter = metrics.getMeter('edge-infer-lambda')
    const seconds = { advice: { explicitBucketBoundaries: LATENCY_BUCKETS } }
    this.requests = meter.createCounter(NAMES.requests, { description: 'Inference requests by outcome' })
    this.rejected = meter.createCounter(NAMES.rejected, { description: 'Requests refused or dropped, by reason' })
    this.batches = meter.createCounter(NAMES.batches, { description: 'Executed batches by why they were sent' })
    this.requestDuration = meter.createHistogram(NAMES.requestDuration, { description: 'Infer request time from parsed body to response', ...seconds })
    this.queueDuration = meter.createHistogram(NAMES.queueDuration, { description: 'Time a request waited for its batch', ...seconds })
    this.computeDuration = meter.createHistogram(NAMES.computeDuration, { description: 'session.run time per batch', ...seconds })
    this.batchSize = meter.createHistogram(NAMES.batchSize, { description: 'Rows per executed batch', advice: { explicitBucketBoundaries: BATCH_SIZE_BUCKETS } })
  }

  /** An answered request; batching is off, so its batch is its own. */
  answered(model: string, version: string, seconds: number, answer: InferAnswer): void {
    const labels: Attributes = { model, version, ...SERVED_BY_LAMBDA }
    const { queue_us: queueUs, compute_us: computeUs, batch_size: rows, batch_reason: reason } = answer.parameters
    this.requests.add(1, { ...labels, status: '200' })
    this.requestDuration.record(seconds, labels)
    this.queueDuration.record(queueUs / 1e6, labels)
    this.computeDuration.record(computeUs / 1e6, labels)
    this.batchSize.record(rows, labels)
    this.batches.add(1, { ...labels, reason })
  }

  /**
   * A request a resolved version refused or failed, counted as the HTTP tier counts it (by status,
   * and a 400 as an `invalid_request` rejection too); one that named no model or version that
   * resolves reaches no version's series on either tier.
   */
  failed(model: string, version: string, status: number): void {
    this.requests.add(1, { model, version, status: String(status), ...SERVED_BY_LAMBDA })
    if (status === 400) this.rejected.add(1, { model, reason: 'invalid_request', ...SERVED_BY_LAMBDA })
  }
}
