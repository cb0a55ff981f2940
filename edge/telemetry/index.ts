import type { Span, Tracer } from '@opentelemetry/api'
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { TracerProvider } from '@opentelemetry/sdk-trace'
import type { Bindings } from '../bindings.ts'
import { randomHex } from '../random-ids.ts'
import { exportConfigFrom } from './config.ts'
import { OtlpJsonExporter } from './exporter.ts'
import { RequestSpanProcessor } from './request-spans.ts'
import { samplerFrom } from './sampler.ts'

/** How long a request's export waits for spans still open after the response (Workers give waitUntil work 30 s). */
export const DEFAULT_MAX_WAIT_MS = 25_000

/** Counts of what the exporter did, for an operator to read. */
export interface TelemetryCounts {
  exportedSpans: number
  failedExports: number
  /** Spans that ended after their request was exported, and were not sent. */
  lateSpans: number
}

/** The edge's tracing, when an OTLP endpoint is bound: the tracer its spans come from, and their export. */
export interface Telemetry {
  tracer: Tracer
  /**
   * Exports the spans of the request whose span is `root`, once all of them have ended (or the
   * wait is up). Never rejects; meant for `waitUntil`, after the response.
   */
  exportRequest(root: Span): Promise<void>
  counts(): TelemetryCounts
}

export interface TelemetryOptions {
  fetch?: typeof fetch
  log?: (line: string) => void
  maxWaitMs?: number
}

/**
 * Tracing from the OTEL_* bindings, built once per isolate configuration; none (tracing off, no
 * cost per request) when no OTLP endpoint is bound. The provider is this isolate's own and is not
 * registered globally: the tracer travels with the isolate, so two configurations in one process
 * (tests) never share one.
 */
export const telemetryFrom = (env: Partial<Bindings>, { fetch, log = console.error, maxWaitMs = DEFAULT_MAX_WAIT_MS }: TelemetryOptions = {}): Telemetry | undefined => {
  const config = exportConfigFrom(env)
  if (config === undefined) return undefined
  const { sampler, unknown } = samplerFrom(env.OTEL_TRACES_SAMPLER, env.OTEL_TRACES_SAMPLER_ARG)
  if (unknown !== undefined) log(JSON.stringify({ level: 'warn', msg: 'OTEL_TRACES_SAMPLER names a sampler the edge does not have; using parentbased_always_on', sampler: unknown }))
  const requests = new RequestSpanProcessor()
  const exporter = new OtlpJsonExporter({ url: config.url, headers: config.headers, timeoutMs: config.timeoutMs, log, ...(fetch ? { fetch } : {}) })
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': config.serviceName })),
    sampler,
    // The edge's pooled CSPRNG rather than the SDK's Math.random ids.
    idGenerator: { generateTraceId: () => randomHex(16), generateSpanId: () => randomHex(8) },
    spanProcessors: [requests],
  })
  return {
    tracer: provider.getTracer('edge-infer'),
    exportRequest: async (root) => exporter.export(await requests.take(root, maxWaitMs)),
    counts: () => ({ exportedSpans: exporter.exported, failedExports: exporter.failures, lateSpans: requests.late }),
  }
}
