import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../../support/otlp-receiver.ts'
import { post, startBackend, type BackendProcess } from '../../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../../support/fixture-repository.ts'

let repo: FixtureRepository
let receiver: OtlpReceiver

const hex = (bytes: number) => randomBytes(bytes).toString('hex')
/** A caller's span context, as the edge sends it. */
const caller = (sampled = true) => {
  const traceId = hex(16)
  const spanId = hex(8)
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${sampled ? '01' : '00'}` }
}
const rowsOf = (count: number) => ({
  inputs: [{ name: 'features', shape: [count, 4], datatype: 'FP32', data: Array.from({ length: count * 4 }, (_, i) => (i % 5) / 5) }],
})
const infer = (backend: BackendProcess, model: string, rows: number, headers: Record<string, string>) =>
  post(`${backend.url}/v2/models/${model}/infer`, rowsOf(rows), headers)

const otlpEnv = (extra: Record<string, string> = {}) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '50',
  MODEL_REPOSITORY: repo.root,
  ...extra,
})

const named = (spans: ReceivedSpan[], name: string, traceId: string) => spans.filter((s) => s.name === name && s.traceId === traceId)
const batchesLinking = (spans: ReceivedSpan[], spanId: string) => spans.filter((s) => s.name === 'backend.batch' && s.links.some((l) => l.spanId === spanId))

beforeAll(async () => {
  repo = await createFixtureRepository({ withDemo: false })
  // A batch leaves only once 4 rows wait (`full`): the requests sent together share one.
  await repo.addModel('quad', {
    maxBatchSize: 4,
    config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 10_000_000, preferred_batch_sizes: [], max_queue_size: 64 }),
  })
  receiver = await startOtlpReceiver()
})

afterAll(async () => {
  await receiver?.close()
  await repo?.remove()
})

describe('backend traces over OTLP/HTTP', () => {
  let backend: BackendProcess
  beforeAll(async () => {
    backend = await startBackend(otlpEnv())
  })
  afterAll(async () => {
    await backend?.stop()
  })

  it('exports each request as a child of its traceparent, its queue time, and one batch span linked to every request it served', async () => {
    const callers = [caller(), caller(), caller()]
    // 1 + 1 + 2 rows: one full batch of 4 rows serving 3 requests.
    const answers = await Promise.all(callers.map((c, i) => infer(backend, 'quad', i === 2 ? 2 : 1, { traceparent: c.traceparent, 'x-request-id': `req-${i}` })))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
    expect(answers.map((a) => (a.body.parameters as { batch_reason: string }).batch_reason)).toEqual(['full', 'full', 'full'])

    const spans = await receiver.until((all) => callers.every((c) => named(all, 'backend.infer', c.traceId).length === 1 && named(all, 'backend.queue', c.traceId).length === 1)
      && all.some((s) => s.name === 'backend.batch' && s.links.length === 3))
    const requests = callers.map((c, i) => {
      const [request] = named(spans, 'backend.infer', c.traceId)
      expect(request.parentSpanId).toBe(c.spanId)
      expect(request.service).toBe('edge-infer-backend')
      expect(request.attributes).toMatchObject({
        'edge_infer.model': 'quad', 'edge_infer.model_version': '1', 'edge_infer.request_id': `req-${i}`,
        'http.response.status_code': 200, 'http.request.method': 'POST', 'http.route': '/v2/models/:model/infer',
      })
      const [queue] = named(spans, 'backend.queue', c.traceId)
      expect(queue.parentSpanId).toBe(request.spanId)
      return { request, queue }
    })

    const batches = batchesLinking(spans, requests[0].request.spanId)
    expect(batches).toHaveLength(1)
    const [batch] = batches
    expect(callers.map((c) => c.traceId)).not.toContain(batch.traceId)
    expect(batch.parentSpanId).toBe('')
    expect(new Set(batch.links.map((l) => `${l.traceId}/${l.spanId}`))).toEqual(new Set(requests.map(({ request }) => `${request.traceId}/${request.spanId}`)))
    expect(batch.attributes).toMatchObject({
      'edge_infer.model': 'quad', 'edge_infer.model_version': '1', 'edge_infer.execution_provider': 'cpu',
      'edge_infer.batch.size': 4, 'edge_infer.batch.requests': batch.links.length, 'edge_infer.batch.reason': 'full',
    })
    for (const { queue } of requests) expect(queue.links).toEqual([{ traceId: batch.traceId, spanId: batch.spanId }])
  })

  it('records refusals on the request span with their status and reason', async () => {
    const c = caller()
    const res = await infer(backend, 'no-such-model', 1, { traceparent: c.traceparent })
    expect(res.status).toBe(404)
    const spans = await receiver.until((all) => named(all, 'backend.infer', c.traceId).length === 1)
    const [request] = named(spans, 'backend.infer', c.traceId)
    expect(request.parentSpanId).toBe(c.spanId)
    expect(request.attributes).toMatchObject({ 'edge_infer.model': 'no-such-model', 'http.response.status_code': 404, 'error.type': 'not_found' })
  })
})

describe('sampling', () => {
  it('keeps the batch of a sampled request when the sampler would drop a new root, and records nothing of an unsampled caller', async () => {
    // Ratio 0: only a caller's sampled flag keeps a trace; the batch span is a root with links.
    const backend = await startBackend(otlpEnv({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }))
    try {
      const kept = caller(true)
      const dropped = caller(false)
      const answers = await Promise.all([infer(backend, 'quad', 2, { traceparent: kept.traceparent }), infer(backend, 'quad', 2, { traceparent: dropped.traceparent })])
      expect(answers.map((a) => a.status)).toEqual([200, 200])
      const spans = await receiver.until((all) => named(all, 'backend.infer', kept.traceId).length === 1 && all.some((s) => s.name === 'backend.batch' && s.links.some((l) => l.traceId === kept.traceId)))
      const [request] = named(spans, 'backend.infer', kept.traceId)
      const [batch] = batchesLinking(spans, request.spanId)
      expect(batch.links).toEqual([{ traceId: kept.traceId, spanId: request.spanId }])
      expect(batch.attributes).toMatchObject({ 'edge_infer.batch.size': 4, 'edge_infer.batch.requests': 2 })
      expect(await backend.stop()).toBe(0)
      // The exit flushed everything: the unsampled caller left no span at all.
      expect(receiver.spans.filter((s) => s.traceId === dropped.traceId)).toEqual([])
    } finally {
      await backend.stop()
    }
  })
})

describe('shutdown', () => {
  it('sends the spans still buffered when SIGTERM arrives', async () => {
    // The processor would wait a minute: only the shutdown's flush can deliver them.
    const backend = await startBackend(otlpEnv({ OTEL_BSP_SCHEDULE_DELAY: '60000' }))
    const c = caller()
    expect((await infer(backend, 'quad', 4, { traceparent: c.traceparent })).status).toBe(200)
    expect(await backend.stop()).toBe(0)
    expect(named(receiver.spans, 'backend.infer', c.traceId)).toHaveLength(1)
    expect(named(receiver.spans, 'backend.queue', c.traceId)).toHaveLength(1)
  })
})

describe('tracing off', () => {
  for (const [why, env] of [
    ['OTEL_SDK_DISABLED=true', { OTEL_SDK_DISABLED: 'true' }],
    ['OTEL_TRACES_EXPORTER=none', { OTEL_TRACES_EXPORTER: 'none' }],
  ] as const) {
    it(`sends nothing with ${why}, even with an endpoint set`, async () => {
      const before = receiver.spans.length
      const backend = await startBackend(otlpEnv(env))
      const c = caller()
      expect((await infer(backend, 'quad', 4, { traceparent: c.traceparent })).status).toBe(200)
      expect(await backend.stop()).toBe(0)
      expect(backend.logs.find((l) => l.msg === 'listening')).toMatchObject({ tracing: 'off' })
      expect(receiver.spans.length).toBe(before)
    })
  }

  it('is off with no OTLP endpoint', async () => {
    const { OTEL_EXPORTER_OTLP_ENDPOINT: _unused, ...env } = otlpEnv()
    const backend = await startBackend(env)
    try {
      expect(backend.logs.find((l) => l.msg === 'listening')).toMatchObject({ tracing: 'off' })
    } finally {
      await backend.stop()
    }
  })
})
