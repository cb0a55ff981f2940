import { SpanStatusCode, trace, type Context as OtelContext, type Span, type SpanContext, type Tracer } from '@opentelemetry/api'
import type { Context, MiddlewareHandler, Next } from 'hono'
import type { CallSpan } from '../../backend-client/transport.ts'
import type { StageEnv } from '../stage.ts'

/**
 * Spans per pipeline stage, from the isolate's tracer (edge/telemetry/), started only when the
 * request is traced. Workers have no async context manager, so the current span travels in `c`:
 * `tracing` (its context, for children) and `traceparent` (what a call made from here sends).
 */
export interface Tracing {
  tracer: Tracer
  /** The current span's context: the running stage's, else the request's. */
  context: OtelContext
}

export interface TraceVariables {
  /** The traceparent of the current span (the running stage's, else the request's): what a call out from here sends. */
  traceparent: string
  /** The current span and the tracer for its children, when the request is traced; unset, no span is started. */
  tracing?: Tracing
}

/** A span's W3C traceparent. */
export const traceparentOf = ({ traceId, spanId, traceFlags }: SpanContext): string =>
  `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`

/** Ends `span`; a thrown Problem's status is recorded, and a 5xx (or any other error) marks the span failed. */
export const endSpan = (span: Span, err?: unknown): void => {
  if (err !== undefined) {
    const status = typeof err === 'object' && err !== null && 'status' in err ? Number((err as { status: unknown }).status) : 500
    span.setAttribute('http.response.status_code', status)
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) })
  }
  span.end()
}

/** What the trace helpers use of a request's context: any stage's whose variables include these. */
export interface TraceSlots {
  get<K extends keyof TraceVariables>(key: K): TraceVariables[K]
  set<K extends keyof TraceVariables>(key: K, value: TraceVariables[K]): void
}

/** Makes `span` the current one: its children and the calls made from here hang under it. */
export const enterSpan = (c: TraceSlots, tracer: Tracer, parent: OtelContext, span: Span): void => {
  c.set('tracing', { tracer, context: trace.setSpan(parent, span) })
  c.set('traceparent', traceparentOf(span.spanContext()))
}

/**
 * Wraps a pipeline stage in a span `edge.<stage>`, a child of the request span, that covers the
 * stage's own work: it ends when the stage hands on (`next`) or finishes, so a later stage's
 * time or failure is never counted to it. While it runs it is the current span (the forward
 * stage's backend call is its child); the stages after it see the request's again. When the
 * request is not traced the stage runs bare.
 */
export const traced = <V extends object>(name: string, middleware: MiddlewareHandler<StageEnv<V>>): MiddlewareHandler<StageEnv<V>> => {
  const spanName = `edge.${name}`
  const inSpan = async (c: Context<StageEnv<V>>, slots: TraceSlots, next: Next, outer: Tracing) => {
    const { tracer, context: parent } = outer
    const outerTraceparent = slots.get('traceparent')
    const span = tracer.startSpan(spanName, {}, parent)
    let open = true
    const close = (err?: unknown) => {
      if (!open) return
      open = false
      endSpan(span, err)
      slots.set('tracing', outer)
      slots.set('traceparent', outerTraceparent)
    }
    enterSpan(slots, tracer, parent, span)
    try {
      const result = await middleware(c, () => {
        close()
        return next()
      })
      close()
      return result
    } catch (err) {
      close(err)
      throw err
    }
  }
  return function traced(c, next) {
    // Every stage runs after the trace stage, which sets these (the pipeline's order check).
    const slots = c as unknown as Context<StageEnv<TraceVariables>>
    const outer = slots.get('tracing')
    return outer === undefined ? middleware(c, next) : inSpan(c, slots, next, outer)
  }
}

/**
 * A span `edge.<name>` under the current one, for a call that outlives the stage making it (the
 * shadow copy, sent after the response): the traceparent to send with the call, and the span,
 * which whoever makes the call ends. Untraced, the current traceparent and no span.
 */
export const callSpan = (c: TraceSlots, name: string): { traceparent: string; span?: CallSpan } => {
  const tracing = c.get('tracing')
  if (tracing === undefined) return { traceparent: c.get('traceparent') }
  const span = tracing.tracer.startSpan(`edge.${name}`, {}, tracing.context)
  return { traceparent: traceparentOf(span.spanContext()), span: { end: (err) => endSpan(span, err) } }
}
