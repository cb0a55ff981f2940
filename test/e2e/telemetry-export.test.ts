import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import { until, type BackendProcess } from '../backend/support/backend-process.ts'
import { edgeClient } from '../support/client.ts'
import { startStack, type Stack } from '../support/stack.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts'
import { freePort } from '../support/ports.ts'
import { startWorker, type RunningWorker } from '../edge/support/workerd.ts'

/** A collector that takes each export and never answers it: the headers of each, and how many the worker gave up on. */
interface StalledCollector {
  url: string
  exports: IncomingHttpHeaders[]
  abandoned: number
  close(): Promise<void>
}

const startStalledCollector = async (): Promise<StalledCollector> => {
  const held = new Set<import('node:http').ServerResponse>()
  const collector: StalledCollector = { url: '', exports: [], abandoned: 0, close: async () => {} }
  const server: Server = createServer((req, res) => {
    collector.exports.push(req.headers)
    held.add(res)
    req.resume()
    res.on('close', () => {
      held.delete(res)
      collector.abandoned++
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  collector.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  collector.close = () => new Promise((resolve) => {
    for (const res of held) res.destroy()
    server.close(() => resolve())
  })
  return collector
}

const SECRET_HEADER = 'Bearer otlp-secret-7f3a'
const STAGES = ['edge.auth', 'edge.rate_limit', 'edge.model', 'edge.normalize', 'edge.validate', 'edge.enrich', 'edge.route', 'edge.cache', 'edge.forward']

let stack: Stack
let backend: BackendProcess
let receiver: OtlpReceiver
let stalled: StalledCollector
let traced: RunningWorker
let slow: RunningWorker
let unreachable: RunningWorker
const keys = { client: '', admin: '' }

const predict = (worker: RunningWorker, traceparent: string, i = 1, signal?: AbortSignal) =>
  edgeClient(worker.url, { key: keys.client }).predict([demoApplicant(i)], { entity: { user_id: `u-${i}` }, headers: { traceparent }, ...(signal ? { signal } : {}) })

const spansOf = async (traceId: string, done: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> => {
  const mine = (all: ReceivedSpan[]) => all.filter((s) => s.traceId === traceId)
  return mine(await receiver.until((all) => done(mine(all))))
}

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  stalled = await startStalledCollector()
  // Three workers over one backend, started side by side here rather than by the stack.
  stack = await startStack({
    backend: { LOG_LEVEL: 'debug' },
    keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 600 }, { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 600 }],
    worker: false,
  })
  backend = stack.backend
  keys.client = stack.keys.web!
  keys.admin = stack.keys.ops!
  const base = { BACKEND_URL: backend.url, API_KEYS: stack.apiKeys }
  ;[traced, slow, unreachable] = await Promise.all([
    startWorker({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }),
    startWorker({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: stalled.url, OTEL_EXPORTER_OTLP_HEADERS: `authorization=${encodeURIComponent(SECRET_HEADER)}`, OTEL_EXPORTER_OTLP_TIMEOUT: '60000', OTEL_SERVICE_NAME: 'edge-stalled' }),
    startWorker({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}`, OTEL_EXPORTER_OTLP_HEADERS: `authorization=${encodeURIComponent(SECRET_HEADER)}` }),
  ])
}, 120_000)

afterAll(async () => {
  await Promise.all([traced?.dispose(), slow?.dispose(), unreachable?.dispose()])
  await stack?.stop()
  await stalled?.close()
  await receiver?.close()
})

describe('the bundled worker in workerd, exporting its spans over OTLP/HTTP', () => {
  it('exports one span per stage in the caller\'s trace, and the backend\'s request hangs under edge.forward', async () => {
    const traceId = '5bf92f3577b34da6a3ce929d0e0e4736'
    const res = await predict(traced, `00-${traceId}-00f067aa0ba902b7-01`)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-trace-id')).toBe(traceId)
    const spans = await spansOf(traceId, (mine) => mine.some((s) => s.name === 'edge.request'))
    expect(receiver.refused).toEqual([])
    const root = spans.find((s) => s.name === 'edge.request')!
    expect(root).toMatchObject({ parentSpanId: '00f067aa0ba902b7', service: 'edge-infer-edge', attributes: { 'http.request.method': 'POST', 'http.response.status_code': 200 } })
    expect(spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name)).toEqual(STAGES)
    expect(spans).toHaveLength(STAGES.length + 1)
    const forward = spans.find((s) => s.name === 'edge.forward')!
    await until(() => backend.logs.some((l) => l.msg === 'infer' && l.traceparent === `00-${traceId}-${forward.spanId}-01`))
  })

  it('follows the caller\'s decision not to sample: nothing exported, the flag passed on', async () => {
    const unsampled = '6bf92f3577b34da6a3ce929d0e0e4736'
    expect((await predict(traced, `00-${unsampled}-00f067aa0ba902b7-00`, 2)).status).toBe(200)
    await until(() => backend.logs.some((l) => l.msg === 'infer' && String(l.traceparent).startsWith(`00-${unsampled}-`)))
    const sent = String(backend.logs.find((l) => l.msg === 'infer' && String(l.traceparent).startsWith(`00-${unsampled}-`))!.traceparent)
    expect(sent).toMatch(new RegExp(`^00-${unsampled}-(?!00f067aa0ba902b7)[0-9a-f]{16}-00$`))
    // A later, sampled request's export arrives; the unsampled one never sent any.
    const sampled = '7bf92f3577b34da6a3ce929d0e0e4736'
    await predict(traced, `00-${sampled}-00f067aa0ba902b7-01`, 3)
    await spansOf(sampled, (mine) => mine.some((s) => s.name === 'edge.request'))
    expect(receiver.spans.filter((s) => s.traceId === unsampled)).toEqual([])
  })

  it('puts the shadow call under a span of its own, exported with the request once it ends', async () => {
    const edge = edgeClient(traced.url, { key: keys.admin })
    const current = await edge.rollout.get()
    const put = await edge.rollout.put({ ...current.body.rollout, shadow: { version: 1, percent: 100 } }, current.headers.get('etag')!)
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    const traceId = '8bf92f3577b34da6a3ce929d0e0e4736'
    expect((await predict(traced, `00-${traceId}-00f067aa0ba902b7-01`, 4)).status).toBe(200)
    const spans = await spansOf(traceId, (mine) => mine.some((s) => s.name === 'edge.request'))
    const root = spans.find((s) => s.name === 'edge.request')!
    const shadow = spans.find((s) => s.name === 'edge.shadow')
    expect(shadow?.parentSpanId).toBe(root.spanId)
    await until(() => backend.logs.some((l) => l.msg === 'infer' && l.traceparent === `00-${traceId}-${shadow!.spanId}-01`))
  })

  it('answers while a stalled collector holds the export, and sends the headers secret only to the collector', async () => {
    // Bounded well below the export's 60 s timeout: an answer that waited for the export would not come in time.
    const res = await predict(slow, '00-9bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 5, AbortSignal.timeout(10_000))
    expect(res.status).toBe(200)
    expect(res.body.predictions).toHaveLength(1)
    await until(() => stalled.exports.length >= 1)
    expect(stalled.abandoned).toBe(0)
    expect(stalled.exports[0]).toMatchObject({ authorization: SECRET_HEADER, 'content-type': 'application/json' })
    expect(slow.logs.join('\n')).not.toContain('otlp-secret')
  })

  it('answers as usual when the collector is unreachable, and says so', async () => {
    for (const i of [6, 7]) expect((await predict(unreachable, `00-a${i}f92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`, i)).status).toBe(200)
    await until(() => unreachable.logs.some((l) => l.includes('trace export failed')))
    expect(unreachable.logs.join('\n')).not.toContain('otlp-secret')
  })
})
