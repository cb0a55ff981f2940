import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer'
import type { ReadableSpan } from '@opentelemetry/sdk-trace'
import type { ExportConfig } from './config.ts'

export interface OtlpExporterOptions extends Omit<ExportConfig, 'serviceName'> {
  fetch?: typeof fetch
  /** Where the first failure is reported (the Workers console by default). */
  log?: (line: string) => void
}

const messageOf = (error: unknown) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error))

/**
 * POSTs spans to an OTLP/HTTP collector as JSON (`JsonTraceSerializer`) with `fetch`, each export
 * cut off after `timeoutMs`. An export never throws: a failure is counted, and only the first is
 * logged, so a collector that is down costs one line, not one per request.
 */
export class OtlpJsonExporter {
  /** Spans the collector accepted. */
  exported = 0
  /** Exports that failed: unreachable, timed out, or refused. */
  failures = 0
  private readonly url: string
  private readonly headers: Record<string, string>
  private readonly timeoutMs: number
  private readonly fetcher: typeof fetch
  private readonly log: (line: string) => void

  constructor({ url, headers, timeoutMs, fetch: fetcher = (input, init) => fetch(input, init), log = console.error }: OtlpExporterOptions) {
    this.url = url
    this.headers = { ...headers, 'content-type': 'application/json' }
    this.timeoutMs = timeoutMs
    this.fetcher = fetcher
    this.log = log
  }

  async export(spans: ReadableSpan[]): Promise<void> {
    if (spans.length === 0) return
    try {
      const bytes = JsonTraceSerializer.serializeRequest(spans)
      if (bytes === undefined) throw new Error('the spans could not be serialized')
      // Sent as the JSON text it is: a byte view's type differs between the Workers and DOM libs, text is a body in both.
      const body = new TextDecoder().decode(bytes)
      const res = await this.fetcher(this.url, { method: 'POST', headers: this.headers, body, signal: AbortSignal.timeout(this.timeoutMs) })
      // Read to the end, so the connection can be reused.
      await res.arrayBuffer()
      if (!res.ok) throw new Error(`the collector answered ${res.status}`)
      this.exported += spans.length
    } catch (error) {
      if (this.failures++ === 0) {
        // The origin only: the path may carry a token, and the headers are the secret.
        const origin = URL.canParse(this.url) ? new URL(this.url).origin : 'an unparsable URL'
        this.log(JSON.stringify({ level: 'error', msg: 'trace export failed; later failures are counted, not logged', collector: origin, error: messageOf(error) }))
      }
    }
  }
}
