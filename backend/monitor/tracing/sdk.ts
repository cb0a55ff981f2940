import { DiagLogLevel, diag, metrics, trace, type Attributes, type Context, type Link, type ProxyTracerProvider, type SpanKind } from '@opentelemetry/api'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { NodeSDK } from '@opentelemetry/sdk-node'
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, SamplingDecision, TraceIdRatioBasedSampler, type Sampler, type SamplingResult } from '@opentelemetry/sdk-trace'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { Logger } from '../../logger.ts'
import { BATCH_SPAN, Tracing } from './spans.ts'

export const DEFAULT_SERVICE_NAME = 'edge-infer-backend'
/** A batch links every request it serves; the SDK's default of 128 links would cut large batches short. */
const DEFAULT_LINK_COUNT_LIMIT = 1024

/** The sampler `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` name (the specification's values; default parentbased_always_on). */
export const samplerFromEnv = (env: NodeJS.ProcessEnv, logger: Logger): Sampler => {
  const ratio = () => {
    const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim()
    const value = arg ? Number(arg) : 1
    if (Number.isFinite(value) && value >= 0 && value <= 1) return value
    logger.warn('OTEL_TRACES_SAMPLER_ARG is not a ratio in [0, 1]; sampling everything', { OTEL_TRACES_SAMPLER_ARG: arg })
    return 1
  }
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on'
  switch (name) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratio())
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) })
    default:
      logger.warn('unsupported OTEL_TRACES_SAMPLER; using parentbased_always_on', { OTEL_TRACES_SAMPLER: name })
      return new ParentBasedSampler({ root: new AlwaysOnSampler() })
  }
}

/**
 * Keeps every batch span. A batch span is a root (its requests are its links, not its parent),
 * so a ratio sampler would judge it by its own trace id and drop the batch of a sampled request;
 * batch spans are only started for batches that serve a sampled request, so keeping them all
 * follows their requests' decision. Every other span goes to the configured sampler.
 */
export class BatchFollowsRequestsSampler implements Sampler {
  constructor(private readonly configured: Sampler) {}

  shouldSample(context: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    if (name === BATCH_SPAN) return { decision: SamplingDecision.RECORD_AND_SAMPLED }
    return this.configured.shouldSample(context, traceId, name, kind, attributes, links)
  }

  toString(): string {
    return `BatchFollowsRequests{${this.configured.toString()}}`
  }
}

export interface SdkOptions {
  /** Export metrics too (the Lambda tier, which has no scrape); off, no meter provider is registered. */
  metrics?: boolean
}

/**
 * Starts the OpenTelemetry Node SDK for traces only, configured by the standard OTEL_* variables
 * (exporter, protocol, endpoint, headers, batch processor, resource, propagators); no
 * instrumentations, no logs (stdout has them), no metrics unless `metrics` asks (Prometheus scrapes the server's).
 */
export const startSdk = (env: NodeJS.ProcessEnv, logger: Logger, { metrics: withMetrics = false }: SdkOptions = {}): Tracing => {
  // Export failures reach the process log unless the operator asked for the SDK's own.
  if (!env.OTEL_LOG_LEVEL) {
    diag.setLogger({
      error: (message, ...args) => logger.warn('opentelemetry', { message, detail: args.map(String) }),
      warn: (message, ...args) => logger.warn('opentelemetry', { message, detail: args.map(String) }),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    }, DiagLogLevel.WARN)
  }
  const linkLimit = Number(env.OTEL_SPAN_LINK_COUNT_LIMIT)
  const sdk = new NodeSDK({
    // The default name sits under the detected resource, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: DEFAULT_SERVICE_NAME })),
    sampler: new BatchFollowsRequestsSampler(samplerFromEnv(env, logger)),
    spanLimits: { linkCountLimit: Number.isInteger(linkLimit) && linkLimit >= 0 ? linkLimit : DEFAULT_LINK_COUNT_LIMIT },
    instrumentations: [],
    // Metrics only where nothing scrapes (the Lambda tier): the reader OTEL_METRICS_EXPORTER names (OTLP by default).
    ...(withMetrics ? {} : { metricReaders: [] }),
    logRecordProcessors: [],
  })
  sdk.start()
  const bounded = (work: () => Promise<void>, what: string) => (timeoutMs: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        logger.warn('trace export did not finish in time; spans dropped', { timeout_ms: timeoutMs })
        resolve()
      }, timeoutMs)
      work().catch((err: unknown) => {
        logger.warn(`trace export failed ${what}`, { error: err instanceof Error ? err.message : String(err) })
      }).finally(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  // The SDK's provider sits behind the API's proxy; forceFlush exports what the batch processor holds.
  const provider = (): { forceFlush?: () => Promise<void> } => (trace.getTracerProvider() as ProxyTracerProvider).getDelegate() as { forceFlush?: () => Promise<void> }
  const meters = (): { forceFlush?: () => Promise<void> } => metrics.getMeterProvider() as { forceFlush?: () => Promise<void> }
  const flush = bounded(async () => {
    await Promise.all([provider().forceFlush?.(), meters().forceFlush?.()])
  }, 'at a flush')
  return new Tracing(trace.getTracer(DEFAULT_SERVICE_NAME), bounded(() => sdk.shutdown(), 'at shutdown'), flush)
}
