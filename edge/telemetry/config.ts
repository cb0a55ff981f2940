import { type Bindings, servingBindings } from '../bindings.ts'

/** How the edge exports its spans, read from the standard OTEL_* bindings. */
export interface ExportConfig {
  /** Where spans are POSTed (OTLP/HTTP, JSON). */
  url: string
  /** OTEL_EXPORTER_OTLP_HEADERS, decoded: usually the collector's auth. */
  headers: Record<string, string>
  serviceName: string
  timeoutMs: number
}

/**
 * The traces URL: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, else OTEL_EXPORTER_OTLP_ENDPOINT
 * with the signal's path `/v1/traces` appended (the spec's rule for the two); none when both are unset.
 */
export const tracesUrlFrom = (env: Partial<Bindings>): string | undefined => {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
  if (traces) return traces
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined
}

const decoded = (part: string): string | undefined => {
  try {
    return decodeURIComponent(part.trim())
  } catch {
    return undefined
  }
}

/**
 * OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs separated by commas, each part percent-encoded
 * (W3C Baggage's format, as the spec says). A pair without a key or that does not decode is skipped.
 */
export const headersFrom = (raw: string | undefined): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of (raw ?? '').split(',')) {
    const at = pair.indexOf('=')
    if (at < 0) continue
    const key = decoded(pair.slice(0, at))
    const value = decoded(pair.slice(at + 1))
    if (key && value !== undefined) headers[key.toLowerCase()] = value
  }
  return headers
}

/** The export's configuration, or none when no endpoint is bound: tracing is off. */
export const exportConfigFrom = (env: Partial<Bindings>): ExportConfig | undefined => {
  const url = tracesUrlFrom(env)
  if (url === undefined) return undefined
  return {
    url,
    headers: headersFrom(env.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: servingBindings.shape.OTEL_SERVICE_NAME.parse(env.OTEL_SERVICE_NAME),
    timeoutMs: servingBindings.shape.OTEL_EXPORTER_OTLP_TIMEOUT.parse(env.OTEL_EXPORTER_OTLP_TIMEOUT),
  }
}
