import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources'
import { TracerProvider } from '@opentelemetry/sdk-trace'
import type { Bindings } from '../bindings.ts'
import { randomHex } from '../random-ids.ts'
import type { ExportConfig } from './config.ts'
import { OtlpJsonExporter } from './exporter.ts'
import { DEFAULT_MAX_WAIT_MS, type Telemetry, type TelemetryOptions } from './telemetry.ts'
import { RequestSpanProcessor } from './request-spans.ts'
import { samplerFrom } from './sampler.ts'

/** The OpenTelemetry SDK's part of the edge's tracing, imported by `telemetryFrom`'s loader only. */
export const buildTelemetry = (config: ExportConfig, env: Partial<Bindings>, { fetch, log = console.error, maxWaitMs = DEFAULT_MAX_WAIT_MS }: TelemetryOptions): Telemetry => {
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
