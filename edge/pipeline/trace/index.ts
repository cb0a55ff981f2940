import { ROOT_CONTEXT, TraceFlags, trace } from '@opentelemetry/api'
import type { Context, Next } from 'hono'
import { HEADERS } from '../../../shared/headers.ts'
import { inBackground } from '../../background.ts'
import { randomHex } from '../../random-ids.ts'
import type { Telemetry, TelemetryLoader } from '../../telemetry/index.ts'
import type { Stage } from '../stage.ts'
import { type TraceSlots, type TraceVariables, enterSpan } from './spans.ts'

export type { TraceVariables } from './spans.ts'

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZEROS = /^0+$/

export interface TraceContextOptions {
  /** Sampled flag for traces the edge starts itself when it does not trace (with tracing, the sampler decides). */
  sampled?: boolean
}

/**
 * W3C Trace Context: joins the caller's trace when it sends a valid `traceparent` (else starts
 * one), and names the edge's own span as the parent of everything it calls, so the backend's
 * work lands in the same trace. The trace id is echoed to the client for support requests.
 * With an OTLP endpoint bound (the isolate's telemetry) the request runs in a span
 * `edge.request`, a child of the caller's, and its spans are exported after the response;
 * without one no span is started, but the edge still names a span id of its own.
 */
export const traceContext = ({ sampled = true }: TraceContextOptions = {}): Stage<{ isolate: { telemetry?: TelemetryLoader } }, TraceVariables> =>
  async function traceContext(c, next) {
    const incoming = TRACEPARENT.exec(c.req.header(HEADERS.traceparent)?.trim().toLowerCase() ?? '')
    const valid = incoming !== null && !ZEROS.test(incoming[1]) && !ZEROS.test(incoming[2])
    const telemetry = c.get('isolate').telemetry
    if (telemetry) return withRequestSpan(c, next, await telemetry(), valid ? incoming : undefined)
    const traceId = valid ? incoming[1] : randomHex(16)
    c.set('traceparent', `00-${traceId}-${randomHex(8)}-${valid ? incoming[3] : sampled ? '01' : '00'}`)
    await next()
    c.res.headers.set('x-trace-id', traceId)
  }

const withRequestSpan = async (c: TraceSlots & Pick<Context, 'req' | 'res' | 'executionCtx'>, next: Next, telemetry: Telemetry, caller: RegExpExecArray | undefined): Promise<void> => {
  // The caller's span is the remote parent; a trace the edge starts has none, and its sampler decides.
  const parent = caller
    ? trace.setSpanContext(ROOT_CONTEXT, { traceId: caller[1], spanId: caller[2], traceFlags: parseInt(caller[3], 16) & TraceFlags.SAMPLED, isRemote: true })
    : ROOT_CONTEXT
  const span = telemetry.tracer.startSpan('edge.request', { attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path } }, parent)
  enterSpan(c, telemetry.tracer, parent, span)
  try {
    await next()
  } finally {
    span.setAttribute('http.response.status_code', c.res.status)
    span.end()
    inBackground(c, telemetry.exportRequest(span))
  }
  c.res.headers.set('x-trace-id', span.spanContext().traceId)
}
