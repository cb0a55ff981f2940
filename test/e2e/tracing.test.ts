import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import { edgeClient, type EdgeClient } from '../support/client.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts'
import { startStack, type Stack } from '../support/stack.ts'

/**
 * Issue 14's "done when" for traces: a request through the bundled worker in workerd into the
 * real backend, both exporting over OTLP/HTTP to one receiver, reads as one trace from the
 * caller's span through the edge's stages into the batch that served it.
 */

let receiver: OtlpReceiver
let stack: Stack
let edge: EdgeClient

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  stack = await startStack({
    backend: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' },
    keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 600 }],
    worker: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
  })
  edge = edgeClient(stack.worker.url, { key: stack.keys.web! })
})

afterAll(async () => {
  await stack?.stop()
  await receiver?.close()
})

const one = (spans: ReceivedSpan[], name: string, traceId: string): ReceivedSpan | undefined => spans.find((s) => s.name === name && s.traceId === traceId)
const batchLinking = (spans: ReceivedSpan[], request: ReceivedSpan | undefined): ReceivedSpan | undefined =>
  request && spans.find((s) => s.name === 'backend.batch' && s.links.some((l) => l.traceId === request.traceId && l.spanId === request.spanId))

describe('a prediction traced from the caller through the edge into a backend batch', () => {
  it('is one trace: edge.request under the caller, backend.infer under edge.forward, and the batch span linked to it', async () => {
    const callers = [['0cf92f3577b34da6a3ce929d0e0e4736', '1a2b3c4d5e6f7081'], ['1cf92f3577b34da6a3ce929d0e0e4736', '2a2b3c4d5e6f7081']] as const
    const answers = await Promise.all(callers.map(([traceId, spanId], i) =>
      edge.predict([demoApplicant(i + 1)], { entity: { user_id: `u-${i + 1}` }, headers: { traceparent: `00-${traceId}-${spanId}-01` } })))
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
