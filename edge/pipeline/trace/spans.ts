import { ProxyTracer, ROOT_CONTEXT, SpanStatusCode, TraceFlags, trace, type Context as OtelContext, type Span } from '@opentelemetry/api'
import type { Context, MiddlewareHandler } from 'hono'
import type { AppEnv } from '../../env.ts'

/**
 * Spans per pipeline stage through `@opentelemetry/api`: none until a tracer provider is
 * registered (an exporter in production, a recording one in tests). Workers have no async
 * context manager, so the request's trace context is carried in `c` and passed explicitly.
 */
// A proxy: it delegates to whichever provider is registered when a span starts.
const proxy = trace.getTracer('edge-infer')
const tracer = () => proxy

/**
 * Whether a tracer provider is registered. Without one the API hands out proxies with nothing
 * to delegate to, and every span would be a no-op: asked once per request, by `traceContext`.
 */
export const tracing = (): boolean => !(trace.getTracer('edge-infer') instanceof ProxyTracer)

/** The remote parent named by the incoming (or freshly started) traceparent. */
export const remoteContext = (traceId: string, parentSpanId: string, sampled: boolean): OtelContext =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId: parentSpanId, traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, isRemote: true })

/** Starts the request's span under the remote parent. */
export const startRequestSpan = (parent: OtelContext, name: string): { span: Span; context: OtelContext } => {
  const span = tracer().startSpan(name, {}, parent)
  return { span, context: trace.setSpan(parent, span) }
}

const endSpan = (span: Span, err: unknown) => {
  if (err !== undefined) {
    const status = typeof err === 'object' && err !== null && 'status' in err ? Number((err as { status: unknown }).status) : 500
    span.setAttribute('http.response.status_code', status)
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) })
  }
  span.end()
}

/**
 * Wraps a pipeline stage in a span `edge.<stage>`, a child of the request span. When
 * `traceContext` found no provider it leaves no trace context, and the stage runs bare.
 */
export const traced = (name: string, middleware: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> => {
  const spanName = `edge.${name}`
  const inSpan = async (c: Context<AppEnv>, next: () => Promise<void>, parent: OtelContext) => {
    const span = tracer().startSpan(spanName, {}, parent)
    try {
      const result = await middleware(c, next)
      endSpan(span, undefined)
      return result
    } catch (err) {
      endSpan(span, err)
      throw err
    }
  }
  return function traced(c, next) {
    const parent: OtelContext | undefined = c.get('otelContext')
    return parent === undefined ? middleware(c, next) : inSpan(c, next, parent)
  }
}
