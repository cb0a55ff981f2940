import { trace, type Context as OtelContext, type Span, type SpanContext, type Tracer, type TracerProvider } from '@opentelemetry/api'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../../edge/pipeline/auth/api-key.ts'
import { MemoryKeyStore } from '../../../../edge/pipeline/auth/key-store.ts'
import { startBackend, until, type BackendProcess } from '../../../backend/support/backend-process.ts'
import { applicant } from '../../../backend/support/applicants.ts'

interface Recorded {
  name: string
  context: SpanContext
  parentSpanId?: string
  attributes: Record<string, unknown>
  ended: boolean
}

/** A tracer provider that records spans in memory: the test's stand-in for an exporter. */
const recorded: Recorded[] = []
const hex = (bytes: number) => Array.from({ length: bytes }, () => Math.floor(Math.random() * 256).toString(16).padStart(2, '0')).join('')
const recordingTracer = {
  startSpan(name: string, _options: unknown, parent?: OtelContext): Span {
    const parentContext = parent ? trace.getSpanContext(parent) : undefined
    const entry: Recorded = {
      name,
      context: { traceId: parentContext?.traceId ?? hex(16), spanId: hex(8), traceFlags: 1 },
      parentSpanId: parentContext?.spanId,
      attributes: {},
      ended: false,
    }
    recorded.push(entry)
    const span = {
      spanContext: () => entry.context,
      setAttribute: (key: string, value: unknown) => ((entry.attributes[key] = value), span),
      setAttributes: () => span,
      addEvent: () => span,
      addLink: () => span,
      addLinks: () => span,
      setStatus: () => span,
      updateName: () => span,
      end: () => void (entry.ended = true),
      isRecording: () => true,
      recordException: () => {},
    }
    return span as unknown as Span
  },
} as unknown as Tracer
const provider: TracerProvider = { getTracer: () => recordingTracer }

let backend: BackendProcess
let key: string

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider)
  backend = await startBackend({ MODEL_REPOSITORY: 'models', LOG_LEVEL: 'debug' })
  key = generateApiKey('test')
})

afterAll(async () => {
  trace.disable()
  await backend?.stop()
})

describe('tracing', () => {
  it('records a span per pipeline stage under the caller\'s trace and hands the edge span to the backend', async () => {
    const store = new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 100 }])
    const app = createApp({ parts: { keys: store } })
    const traceId = '0af7651916cd43dd8448eb211c80319c'
    const { account_age_months: _a, num_products: _n, ...instance } = applicant(4)
    const res = await app.request('/v1/models/credit-risk/predict', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      body: JSON.stringify({ instances: [instance], entity: { user_id: 'u-1' } }),
    }, { BACKEND_URL: backend.url })
    expect(res.status).toBe(200)
    const mine = recorded.filter((s) => s.context.traceId === traceId)
    const root = mine.find((s) => s.name === 'edge.request')!
    expect(root.parentSpanId).toBe('b7ad6b7169203331')
    expect(root.attributes['http.response.status_code']).toBe(200)
    const stages = mine.filter((s) => s.parentSpanId === root.context.spanId).map((s) => s.name)
    expect(stages).toEqual(['edge.auth', 'edge.rate_limit', 'edge.model', 'edge.normalize', 'edge.validate', 'edge.enrich', 'edge.route', 'edge.forward'])
    expect(mine.every((s) => s.ended)).toBe(true)
    await until(() => backend.logs.some((l) => l.msg === 'infer' && l.traceparent === `00-${traceId}-${root.context.spanId}-01`))
  })
})
