import type { Logger } from '../../logger.ts'
import type { SdkOptions } from './sdk.ts'
import type { Tracing } from './spans.ts'

export type { BatchSpans, Tracing } from './spans.ts'

const listOf = (value: string | undefined): string[] => (value ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')

/**
 * Whether the OTEL_* variables ask for traces: an OTLP endpoint, or an exporter named in
 * OTEL_TRACES_EXPORTER (`console` to debug), and neither OTEL_SDK_DISABLED=true nor `none`.
 */
export const tracingWanted = (env: NodeJS.ProcessEnv): boolean => {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false
  const exporters = listOf(env.OTEL_TRACES_EXPORTER)
  if (exporters.includes('none')) return false
  return exporters.length > 0 || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim())
}

/**
 * The monitor stage's traces. Off (undefined) unless the environment asks for them: then the
 * SDK is not even loaded, no tracer provider, context manager or propagator is registered, and
 * the hot path only ever sees `undefined`.
 */
export const startTracing = async (logger: Logger, options: SdkOptions = {}): Promise<Tracing | undefined> => {
  if (!tracingWanted(process.env)) return undefined
  const { startSdk } = await import('./sdk.ts')
  return startSdk(process.env, logger, options)
}
