import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, propagation, trace, type Link, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api'
import { ATTR_ERROR_TYPE, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE } from '@opentelemetry/semantic-conventions'
import type { BatchReason } from '../../../shared/protocol.ts'

export const REQUEST_SPAN = 'backend.infer'
export const QUEUE_SPAN = 'backend.queue'
export const BATCH_SPAN = 'backend.batch'

/** The project's own span attributes, where the semantic conventions have no name. */
export const ATTR = {
  model: 'edge_infer.model',
  modelVersion: 'edge_infer.model_version',
  requestId: 'edge_infer.request_id',
  /** Rows in a batch, summed over the requests it serves. */
  batchSize: 'edge_infer.batch.size',
  batchRequests: 'edge_infer.batch.requests',
  batchReason: 'edge_infer.batch.reason',
  executionProvider: 'edge_infer.execution_provider',
  /** The tier that served the request (`lambda`); absent on the HTTP tier's spans. */
  servedBy: 'edge_infer.served_by',
} as const

const headerGetter: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
}

/** How a traced request ended, as the HTTP layer saw it. */
export interface RequestOutcome {
  status: number
  /** The version that served it (or was asked for), when known. */
  version: string | undefined
  /** The refusal's reason (`queue_full`, `not_found`…), or the class of an unexpected error. */
  errorType: string | undefined
}

/** A request waiting in a batcher: its span, if traced, and when it was queued (performance.now()). */
export interface QueuedRequest {
  readonly span: Span | undefined
  readonly enqueuedAt: number
}

const sampled = (span: Span | undefined): span is Span => span !== undefined && (span.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0

/**
 * The spans of one model version's batches. A batch serves many requests, each in its own
 * trace: its span is a root with a link to every sampled request span, and each request's
 * `backend.queue` span (enqueue to batch start, a child of its request) links back to it.
 */
export class BatchSpans {
  constructor(
    private readonly tracer: Tracer,
    private readonly attributes: { model: string; version: string; provider: string },
  ) {}

  /** At dispatch (`now`, performance.now()); undefined, and nothing recorded, when no request in the batch is sampled. */
  start(requests: readonly QueuedRequest[], rows: number, reason: BatchReason, now: number): Span | undefined {
    let links: Link[] | undefined
    for (const request of requests) if (sampled(request.span)) (links ??= []).push({ context: request.span.spanContext() })
    if (!links) return undefined
    const batch = this.tracer.startSpan(BATCH_SPAN, {
      kind: SpanKind.INTERNAL,
      startTime: now,
      links,
      attributes: {
        [ATTR.model]: this.attributes.model,
        [ATTR.modelVersion]: this.attributes.version,
        [ATTR.executionProvider]: this.attributes.provider,
        [ATTR.batchSize]: rows,
        [ATTR.batchRequests]: requests.length,
        [ATTR.batchReason]: reason,
      },
    }, ROOT_CONTEXT)
    const toBatch = [{ context: batch.spanContext() }]
    for (const request of requests) {
      if (!sampled(request.span)) continue
      this.tracer.startSpan(QUEUE_SPAN, { kind: SpanKind.INTERNAL, startTime: request.enqueuedAt, links: toBatch }, trace.setSpan(ROOT_CONTEXT, request.span)).end(now)
    }
    return batch
  }

  /** Ends what `start` returned (once: a failure after the end is not the batch's); `error` when the run failed. */
  end(span: Span | undefined, error?: string): void {
    if (!span?.isRecording()) return
    if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error })
    span.end()
  }
}

/** The backend's tracer, once the SDK is running: request spans and the batchers' spans. */
export class Tracing {
  constructor(
    readonly tracer: Tracer,
    /** Flushes what is buffered and stops exporting; resolves within `timeoutMs` whatever the collector does. */
    readonly shutdown: (timeoutMs: number) => Promise<void>,
    /** Exports what is buffered now, within `timeoutMs` (the Lambda tier, whose timers do not run while frozen). */
    readonly flush: (timeoutMs: number) => Promise<void> = async () => {},
  ) {}

  /** The request's `backend.infer` span, a child of the caller's `traceparent` when it sent one. */
  startRequest(headers: Headers, route: string, model: string, requestId: string | undefined): Span {
    const parent = propagation.extract(ROOT_CONTEXT, headers, headerGetter)
    const span = this.tracer.startSpan(REQUEST_SPAN, {
      kind: SpanKind.SERVER,
      attributes: { [ATTR_HTTP_REQUEST_METHOD]: 'POST', [ATTR_HTTP_ROUTE]: route, [ATTR.model]: model },
    }, parent)
    if (requestId !== undefined) span.setAttribute(ATTR.requestId, requestId)
    return span
  }

  /** Ends the request span; server faults (5xx) are errors, refusals (4xx) are the client's (HTTP server conventions). */
  endRequest(span: Span, { status, version, errorType }: RequestOutcome): void {
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status)
    if (version !== undefined) span.setAttribute(ATTR.modelVersion, version)
    if (status >= 400) span.setAttribute(ATTR_ERROR_TYPE, errorType ?? String(status))
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
  }

  batches(attributes: { model: string; version: string; provider: string }): BatchSpans {
    return new BatchSpans(this.tracer, attributes)
  }
}
