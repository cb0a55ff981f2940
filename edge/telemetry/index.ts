import type { Span, Tracer } from '@opentelemetry/api'
import type { Bindings } from '../bindings.ts'
import { exportConfigFrom } from './config.ts'

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

/** The isolate's tracing, built at its first traced request: the SDK is loaded only then. */
export type TelemetryLoader = () => Promise<Telemetry>

/**
 * Tracing from the OTEL_* bindings, once per isolate configuration; none (tracing off, no cost per
 * request) when no OTLP endpoint is bound. With one, the OpenTelemetry SDK (edge/telemetry/sdk.ts)
 * is imported and the provider built at the first request that is traced, so an isolate that
 * traces nothing never evaluates it. The provider is this isolate's own and is not registered
 * globally: the tracer travels with the isolate, so two configurations in one process (tests)
 * never share one.
 */
export const telemetryFrom = (env: Partial<Bindings>, options: TelemetryOptions = {}): TelemetryLoader | undefined => {
  const config = exportConfigFrom(env)
  if (config === undefined) return undefined
  let built: Promise<Telemetry> | undefined
  return () => (built ??= import('./sdk.ts').then(({ buildTelemetry }) => buildTelemetry(config, env, options)))
}
