import type { Span, Tracer } from '@opentelemetry/api'

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
