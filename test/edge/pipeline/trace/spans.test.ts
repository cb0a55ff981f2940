import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../../edge/app.ts'
import type { AppEnv, AppVariables } from '../../../../edge/app.ts'
import { createIsolate } from '../../../../edge/isolate.ts'
import { isolate } from '../../../../edge/pipeline/isolate/index.ts'
import { traceContext } from '../../../../edge/pipeline/trace/index.ts'
import { traced } from '../../../../edge/pipeline/trace/spans.ts'
import { telemetryFrom } from '../../../../edge/telemetry/index.ts'
import { generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import { startBackend, until, type BackendProcess } from '../../../backend/support/backend-process.ts'
import { applicant } from '../../../backend/support/applicants.ts'
import { startOtlpReceiver, type OtlpReceiver } from '../../../support/otlp-receiver.ts'

let backend: BackendProcess
let receiver: OtlpReceiver
let key: string

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  backend = await startBackend({ MODEL_REPOSITORY: 'models', LOG_LEVEL: 'debug' })
  key = generateApiKey('test')
})

afterAll(async () => {
  await backend?.stop()
  await receiver?.close()
})

const { account_age_months: _a, num_products: _n, ...instance } = applicant(4)

describe('tracing through the app, exported to an OTLP receiver', () => {
  it('exports a span per pipeline stage under the caller\'s trace, and hands the forward span to the backend', async () => {
    const store = new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 100 }])
    const app = createApp({ parts: { keys: store } })
    const traceId = '0af7651916cd43dd8448eb211c80319c'
    const res = await app.request('/v1/models/credit-risk/predict', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      body: JSON.stringify({ instances: [instance], entity: { user_id: 'u-1' } }),
    }, { BACKEND_URL: backend.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'edge-under-test' })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-trace-id')).toBe(traceId)
    const mine = await receiver.until((spans) => spans.some((s) => s.traceId === traceId && s.name === 'edge.request'))
    const spans = mine.filter((s) => s.traceId === traceId)
    const root = spans.find((s) => s.name === 'edge.request')!
    expect(root.parentSpanId).toBe('b7ad6b7169203331')
    expect(root.service).toBe('edge-under-test')
    expect(root.attributes['http.response.status_code']).toBe(200)
    const stages = spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name)
    expect(stages).toEqual(['edge.auth', 'edge.rate_limit', 'edge.model', 'edge.normalize', 'edge.validate', 'edge.enrich', 'edge.route', 'edge.cache', 'edge.forward'])
    // One export per request, holding all of its spans.
    expect(spans).toHaveLength(stages.length + 1)
    const forward = spans.find((s) => s.name === 'edge.forward')!
    await until(() => backend.logs.some((l) => l.msg === 'infer' && l.traceparent === `00-${traceId}-${forward.spanId}-01`))
  })

  it('records a stage\'s own failure on its span and not on the stages before it', async () => {
    const app = createApp({ parts: { keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 100 }]) } })
    const traceId = '1af7651916cd43dd8448eb211c80319c'
    const res = await app.request('/v1/models/no-such-model/predict', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, traceparent: `00-${traceId}-b7ad6b7169203331-01` },
      body: JSON.stringify({ instances: [instance] }),
    }, { BACKEND_URL: backend.url, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    expect(res.status).toBe(404)
    const spans = (await receiver.until((all) => all.some((s) => s.traceId === traceId && s.name === 'edge.request'))).filter((s) => s.traceId === traceId)
    const status = Object.fromEntries(spans.map((s) => [s.name, s.attributes['http.response.status_code']]))
    expect(status).toEqual({ 'edge.request': 404, 'edge.auth': undefined, 'edge.rate_limit': undefined, 'edge.model': 404 })
    expect(spans.find((s) => s.name === 'edge.request')!.service).toBe('edge-infer-edge')
  })

  it('ends a stage\'s span when the stage hands on, and makes it the current span while it runs', async () => {
    interface OtlpSpan { name: string; spanId: string; startTimeUnixNano: string; endTimeUnixNano: string }
    const exported: OtlpSpan[] = []
    // The exporter's own fetch, reading what the real serializer wrote.
    const capture = async (_url: string | URL | Request, init?: RequestInit) => {
      const body = JSON.parse(init!.body as string) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> }
      exported.push(...body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((scope) => scope.spans)))
      return new Response('{}')
    }
    const telemetry = telemetryFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector.test' }, { fetch: capture })!
    const seen: Record<string, string> = {}
    const app = new Hono<AppEnv>()
    app.use('*', isolate({ isolateFor: () => createIsolate({} as never, { telemetry }) }))
    app.use('*', traceContext())
    app.use('*', traced<AppVariables>('outer', async (c, next) => {
      seen.outer = c.get('traceparent')
      await next()
      seen.afterNext = c.get('traceparent')
    }))
    // Untraced time between the two stages (the SDK stamps a span's start in whole milliseconds).
    app.use('*', async (_c, next) => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      await next()
    })
    app.get('/', traced<AppVariables>('inner', async (c) => {
      seen.inner = c.get('traceparent')
      return c.text('ok')
    }))
    const res = await app.request('/')
    expect(res.status).toBe(200)
    await until(() => exported.length === 3)
    const byName = Object.fromEntries(exported.map((span) => [span.name, span]))
    expect(Object.keys(byName).sort()).toEqual(['edge.inner', 'edge.outer', 'edge.request'])
    expect(BigInt(byName['edge.outer'].endTimeUnixNano)).toBeLessThanOrEqual(BigInt(byName['edge.inner'].startTimeUnixNano))
    expect(seen.outer.slice(36, 52)).toBe(byName['edge.outer'].spanId)
    expect(seen.inner.slice(36, 52)).toBe(byName['edge.inner'].spanId)
    // Past its stage, a call goes out under the request's span again.
    expect(seen.afterNext.slice(36, 52)).toBe(byName['edge.request'].spanId)
  })
})
