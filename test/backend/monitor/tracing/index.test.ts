import { context, propagation, trace } from '@opentelemetry/api'
import { afterEach, describe, expect, it } from 'vitest'
import { createLogger } from '../../../../backend/logger.ts'
import { startTracing, tracingWanted } from '../../../../backend/monitor/tracing/index.ts'

const OTEL_API = Symbol.for('opentelemetry.js.api.1')
/** Which OpenTelemetry globals (trace, context, propagation, …) are registered in this process. */
const registered = (): string[] => Object.keys((globalThis as Record<symbol, object | undefined>)[OTEL_API] ?? {}).filter((k) => k !== 'version')

/** Runs with exactly these OTEL_* variables in the process environment. */
const withOtelEnv = async <T>(vars: Record<string, string>, run: () => Promise<T>): Promise<T> => {
  const saved = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_')))
  for (const k of Object.keys(saved)) delete process.env[k]
  Object.assign(process.env, vars)
  try {
    return await run()
  } finally {
    for (const k of Object.keys(process.env)) if (k.startsWith('OTEL_')) delete process.env[k]
    Object.assign(process.env, saved)
  }
}

const logger = createLogger('silent')

afterEach(() => {
  trace.disable()
  context.disable()
  propagation.disable()
})

describe('tracingWanted', () => {
  it.each([
    [{}, false],
    [{ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tempo:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://tempo:4318/v1/traces' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }, false],
    [{ OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tempo:4318', OTEL_TRACES_EXPORTER: 'none' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tempo:4318', OTEL_SDK_DISABLED: 'TRUE' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://tempo:4318', OTEL_SDK_DISABLED: 'false' }, true],
  ])('%j → %s', (env, wanted) => {
    expect(tracingWanted(env)).toBe(wanted)
  })
})

describe('startTracing', () => {
  it('off: returns nothing and registers no tracer provider, context manager or propagator', async () => {
    const before = registered()
    const tracing = await withOtelEnv({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, () => startTracing(logger))
    expect(tracing).toBeUndefined()
    expect(registered()).toEqual(before)
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false)
  })

  it('on: registers the SDK globally (what the off path must not do)', async () => {
    const before = registered()
    const tracing = await withOtelEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, () => startTracing(logger))
    expect(tracing).toBeDefined()
    expect(registered()).toEqual(expect.arrayContaining([...before, 'trace', 'context', 'propagation']))
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(true)
    await tracing!.shutdown(1_000)
  })
})
