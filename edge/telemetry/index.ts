import type { Bindings } from '../bindings.ts'
import { exportConfigFrom } from './config.ts'
import type { Telemetry, TelemetryOptions } from './telemetry.ts'

export { DEFAULT_MAX_WAIT_MS, type Telemetry, type TelemetryCounts, type TelemetryOptions } from './telemetry.ts'

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
