import type { Context as OtelContext } from '@opentelemetry/api'
import type { Context, Next } from 'hono'
import { HEADERS } from '../../../shared/headers.ts'
import { randomHex } from '../../random-ids.ts'
import type { Stage, StageEnv } from '../stage.ts'
import { remoteContext, startRequestSpan, tracing } from './spans.ts'

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZEROS = /^0+$/

export interface TraceVariables {
  /** The traceparent the edge sends onward: the caller's trace id, the edge's span id. */
  traceparent: string
  /** OpenTelemetry context of the request span, when a tracer provider is registered; stage spans are its children. */
  otelContext?: OtelContext
}

export interface TraceContextOptions {
  /** Sampled flag for traces the edge starts itself. */
  sampled?: boolean
}

/**
 * W3C Trace Context: joins the caller's trace when it sends a valid `traceparent` (else starts
 * one), and names the edge's own span as the parent of everything it calls, so the backend's
 * work lands in the same trace. The trace id is echoed to the client for support requests.
 * With no tracer provider registered no span is started (`otelContext` stays unset), but the
 * edge still names a span id of its own.
 */
export const traceContext = ({ sampled = true }: TraceContextOptions = {}): Stage<object, TraceVariables> =>
  async function traceContext(c, next) {
    const incoming = TRACEPARENT.exec(c.req.header(HEADERS.traceparent)?.trim().toLowerCase() ?? '')
    const valid = incoming !== null && !ZEROS.test(incoming[1]) && !ZEROS.test(incoming[2])
    const traceId = valid ? incoming[1] : randomHex(16)
    const flags = valid ? incoming[3] : sampled ? '01' : '00'
    if (tracing()) await withRequestSpan(c, next, traceId, flags, valid ? incoming[2] : undefined)
    else {
      c.set('traceparent', `00-${traceId}-${randomHex(8)}-${flags}`)
      await next()
    }
    c.res.headers.set('x-trace-id', traceId)
  }

const withRequestSpan = async (c: Context<StageEnv<TraceVariables>>, next: Next, traceId: string, flags: string, parentSpanId: string | undefined): Promise<void> => {
  const parent = remoteContext(traceId, parentSpanId ?? randomHex(8), (parseInt(flags, 16) & 1) === 1)
  const { span, context } = startRequestSpan(parent, 'edge.request')
  span.setAttribute('http.request.method', c.req.method)
  span.setAttribute('url.path', c.req.path)
  // A provider that does not record may hand back the parent's span id: name one of our own then.
  const spanId = span.spanContext().spanId
  c.set('otelContext', context)
  c.set('traceparent', `00-${traceId}-${ZEROS.test(spanId) || spanId === parentSpanId ? randomHex(8) : spanId}-${flags}`)
  try {
    await next()
  } finally {
    span.setAttribute('http.response.status_code', c.res.status)
    span.end()
  }
}
