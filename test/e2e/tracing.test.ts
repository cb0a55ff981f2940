import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../edge/pipeline/auth/api-key.ts'
import { startBackend, type BackendProcess } from '../backend/support/backend-process.ts'
import { applicant } from '../backend/support/applicants.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts'
import { startWorker, type RunningWorker } from './support/workerd.ts'

/**
 * Issue 14's "done when" for traces: a request through the bundled worker in workerd into the
 * real backend, both exporting over OTLP/HTTP to one receiver, reads as one trace from the
 * caller's span through the edge's stages into the batch that served it.
 */

let receiver: OtlpReceiver
let backend: BackendProcess
let worker: RunningWorker
const key = generateApiKey('test')

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  backend = await startBackend({
    MODEL_REPOSITORY: 'models',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  })
  const keys = JSON.stringify([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 600 }])
  worker = await startWorker({ BACKEND_URL: backend.url, API_KEYS: keys, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
})

afterAll(async () => {
  await worker?.dispose()
  await backend?.stop()
  await receiver?.close()
})

const predict = (i: number, traceparent: string) => {
  const { account_age_months: _a, num_products: _n, ...instance } = applicant(i)
  return fetch(`${worker.url}/v1/models/credit-risk/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, traceparent },
    body: JSON.stringify({ instances: [instance], entity: { user_id: `u-${i}` } }),
  })
}

const one = (spans: ReceivedSpan[], name: string, traceId: string): ReceivedSpan | undefined => spans.find((s) => s.name === name && s.traceId === traceId)
const batchLinking = (spans: ReceivedSpan[], request: ReceivedSpan | undefined): ReceivedSpan | undefined =>
  request && spans.find((s) => s.name === 'backend.batch' && s.links.some((l) => l.traceId === request.traceId && l.spanId === request.spanId))

describe('a prediction traced from the caller through the edge into a backend batch', () => {
  it('is one trace: edge.request under the caller, backend.infer under edge.forward, and the batch span linked to it', async () => {
    const callers = [['0cf92f3577b34da6a3ce929d0e0e4736', '1a2b3c4d5e6f7081'], ['1cf92f3577b34da6a3ce929d0e0e4736', '2a2b3c4d5e6f7081']] as const
    const answers = await Promise.all(callers.map(([traceId, spanId], i) => predict(i + 1, `00-${traceId}-${spanId}-01`)))
    expect(answers.map((a) => a.status)).toEqual([200, 200])
    const spans = await receiver.until((all) => callers.every(([traceId]) => one(all, 'edge.request', traceId) && batchLinking(all, one(all, 'backend.infer', traceId))))
    expect(receiver.refused).toEqual([])
    for (const [traceId, callerSpan] of callers) {
      const request = one(spans, 'edge.request', traceId)!
      const forward = one(spans, 'edge.forward', traceId)!
      const infer = one(spans, 'backend.infer', traceId)!
      expect(request).toMatchObject({ service: 'edge-infer-edge', parentSpanId: callerSpan })
      expect(forward).toMatchObject({ service: 'edge-infer-edge', parentSpanId: request.spanId })
      expect(infer).toMatchObject({ service: 'edge-infer-backend', parentSpanId: forward.spanId })
      expect(one(spans, 'backend.queue', traceId)?.parentSpanId).toBe(infer.spanId)
      expect(batchLinking(spans, infer)).toMatchObject({ service: 'edge-infer-backend', attributes: expect.objectContaining({ 'edge_infer.model': 'credit-risk' }) })
    }
  })
})
