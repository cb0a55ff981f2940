import { ROOT_CONTEXT, SpanKind, propagation, type Span } from '@opentelemetry/api'
import { errorFields, type Logger } from '../logger.ts'
import { redisCountStore } from '../monitor/drift/count-store.ts'
import { DriftMonitor } from '../monitor/drift/monitor.ts'
import { startTracing } from '../monitor/tracing/index.ts'
import { ATTR, REQUEST_SPAN, type RequestOutcome, type Tracing } from '../monitor/tracing/spans.ts'
import type { Settings } from '../settings.ts'
import { LambdaMetrics } from './metrics.ts'

/** The part of the Node runtime's invoke context the handler reads: the caller's ClientContext. */
export interface LambdaContext {
  clientContext?: { custom?: Record<string, unknown> } | null
}

/** The `traceparent` the edge put in the invocation's ClientContext (`custom.traceparent`), if any. */
export const traceparentOf = (context: LambdaContext | undefined): string | undefined => {
  const value = context?.clientContext?.custom?.traceparent
  return typeof value === 'string' ? value : undefined
}

/** Longest the end of an invoke waits for its spans to leave; a collector that is down must not hold the answer. */
const TRACE_FLUSH_MS = 2_000

/**
 * What the Lambda tier counts and exports besides its answer: the drift counter the HTTP tier
 * uses (rows and per-request health, merged through the same Redis hashes with write-once ids)
 * and `backend.infer` spans in the edge's trace.
 *
 * A frozen Lambda instance runs no timers, and the runtime offers a function no hook before a
 * freeze (the Extensions API's SHUTDOWN comes once, when the instance is retired, and only to an
 * extension). So nothing waits for a period: each invoke flushes its drift deltas and spans
 * before its answer is returned. A flush Redis did not confirm stays in doubt and is resent whole
 * under the same id by the next invoke (a no-op if it had landed), so a count is merged exactly
 * once; only an instance retired with a flush in doubt loses it.
 */
export class LambdaTelemetry {
  /** Drift counting as DRIFT_MONITORING and the Redis settings say; the drift monitor is the manager's. */
  readonly drift: DriftMonitor | undefined
  /** Tracing and metrics as the OTEL_* variables say (off by default): the SDK loads in the background, during init. */
  private readonly tracing: Promise<Tracing | undefined>
  /** Made once the SDK has registered its meter provider: an instrument made before would stay the API's no-op. */
  private readonly metrics: Promise<LambdaMetrics>

  constructor(settings: Settings, private readonly logger: Logger) {
    const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = settings
    const store = url && token ? redisCountStore({ url, token, timeoutMs: settings.DRIFT_REDIS_TIMEOUT_MS }) : undefined
    // No periodic flush (start() is never called): see flush().
    this.drift = settings.DRIFT_MONITORING === 'on' ? new DriftMonitor({ logger, store }) : undefined
    this.tracing = startTracing(logger, { metrics: true }).catch((err: unknown) => {
      logger.warn('tracing off: the OpenTelemetry SDK did not start', errorFields(err))
      return undefined
    })
    this.metrics = this.tracing.then(() => new LambdaMetrics())
  }

  /**
   * An invoke's metrics and, with tracing on, its `backend.infer` span: a child of the edge's
   * `edge.forward` when a traceparent came.
   */
  async startInvoke(context: LambdaContext | undefined): Promise<Invocation> {
    const [tracing, metrics] = await Promise.all([this.tracing, this.metrics])
    if (!tracing) return { span: undefined, metrics, end: () => {} }
    const traceparent = traceparentOf(context)
    const parent = traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT
    const span = tracing.tracer.startSpan(REQUEST_SPAN, { kind: SpanKind.SERVER, attributes: { [ATTR.servedBy]: 'lambda' } }, parent)
    return { span, metrics, end: (outcome) => tracing.endRequest(span, outcome) }
  }

  /** End of an invoke: the drift deltas to Redis, the spans and metrics to the collector, both bounded; failures are logged, never the caller's. */
  async flush(): Promise<void> {
    const tracing = await this.tracing
    await Promise.all([
      this.drift?.flush().catch((err: unknown) => this.logger.warn('drift counts not flushed; resent by the next invoke', errorFields(err))),
      tracing?.flush(TRACE_FLUSH_MS),
    ])
  }

  async shutdown(): Promise<void> {
    await this.drift?.close()
    await (await this.tracing)?.shutdown(TRACE_FLUSH_MS)
  }
}

/** One invoke's telemetry: its span (undefined with tracing off), ended with how the request ended, and the tier's metrics. */
export interface Invocation {
  span: Span | undefined
  metrics: LambdaMetrics
  end(outcome: RequestOutcome): void
}
