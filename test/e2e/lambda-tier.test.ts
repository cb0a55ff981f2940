import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../dev/lambda-endpoint/server.ts'
import { BackendMonitor } from '../../edge/rollout/backend-monitor.ts'
import { DEMO_REPOSITORY } from '../backend/support/fixture-repository.ts'
import { edgeClient, type EdgeClient } from '../support/client.ts'
import { refusingInfer } from '../support/forwarding-proxy.ts'
import { lambdaBindings } from '../support/lambda-bindings.ts'
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts'
import { setProcessEnv } from '../support/process-env.ts'
import { startStack, type Stack } from '../support/stack.ts'

/**
 * Issue 33 §1: the Lambda tier seen like the GPU tier. The bundled worker in workerd calls the
 * real backend through a hop that refuses every infer call (429, as a full queue does), so each
 * prediction falls back to the local Lambda Invoke endpoint (real @aws-sdk/client-lambda in the
 * worker) running the backend's Lambda handler. Edge and handler export spans to one OTLP
 * receiver; handler and backend count drift into one redis-server behind the Upstash adapter,
 * and the backend's drift report (what the canary controller reads) must hold the Lambda's rows.
 */

const FUNCTION = 'edge-infer-cpu'
const TOKEN = 'lambda-tier-test-token-0123456789'
const MODEL = 'credit-risk'
let restoreEnv: (() => void) | undefined
let receiver: OtlpReceiver
let endpoint: LambdaEndpoint
let stack: Stack
let edge: EdgeClient

beforeAll(async () => {
  receiver = await startOtlpReceiver()
  // The handler's manager (and its drift counter and tracer) is made on the first invoke, after the env below is set.
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  stack = await startStack({
    redis: { token: TOKEN },
    between: refusingInfer,
    keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 600 }],
    worker: { ...lambdaBindings(FUNCTION, endpoint.url), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url },
  })
  restoreEnv = setProcessEnv({
    MODEL_REPOSITORY: DEMO_REPOSITORY,
    LOG_LEVEL: 'silent',
    UPSTASH_REDIS_REST_URL: stack.upstash!.adapter.url,
    UPSTASH_REDIS_REST_TOKEN: TOKEN,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: 'edge-infer-lambda',
  })
  edge = edgeClient(stack.worker.url, { key: stack.keys.web! })
})

afterAll(async () => {
  await stack?.stop()
  await endpoint?.close()
  await receiver?.close()
  restoreEnv?.()
})

const one = (spans: ReceivedSpan[], name: string, traceId: string): ReceivedSpan | undefined => spans.find((s) => s.name === name && s.traceId === traceId)

interface DriftHealth { rows: number; health: { requests: number; errors: number } }

/** The backend's drift report of the version over the last 5 minutes: every replica's and tier's counts, merged through Redis. */
const driftOf = async (version: number): Promise<DriftHealth> => {
  const res = await fetch(`${stack.backend.url}/v2/models/${MODEL}/versions/${version}/drift?window=5m`)
  expect(res.status).toBe(200)
  return (await res.json()) as DriftHealth
}

describe('a prediction the Lambda tier serves', () => {
  let version: number

  it('is one trace with its edge spans: backend.infer (served_by=lambda) under edge.forward under edge.request under the caller', async () => {
    const [traceId, callerSpan] = ['4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7']
    const res = await edge.predict([demoApplicant(1)], { entity: { user_id: 'u-1' }, headers: { traceparent: `00-${traceId}-${callerSpan}-01` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-served-by')).toBe('lambda')
    expect(endpoint.invocations()).toBe(1)
    version = Number(res.body.version)
    const spans = await receiver.until((all) => one(all, 'edge.request', traceId) !== undefined && one(all, 'backend.infer', traceId) !== undefined)
    expect(receiver.refused).toEqual([])
    const request = one(spans, 'edge.request', traceId)!
    const infer = one(spans, 'backend.infer', traceId)!
    const parent = spans.find((s) => s.spanId === infer.parentSpanId)
    expect(request).toMatchObject({ service: 'edge-infer-edge', parentSpanId: callerSpan })
    expect(parent).toMatchObject({ service: 'edge-infer-edge', name: 'edge.forward', traceId, parentSpanId: request.spanId })
    expect(infer).toMatchObject({
      service: 'edge-infer-lambda',
      attributes: expect.objectContaining({ 'edge_infer.served_by': 'lambda', 'edge_infer.model': MODEL, 'edge_infer.model_version': String(version), 'http.response.status_code': 200 }),
    })
  })

  it("counts its rows and requests in the backend's drift report, once each (merged through Redis at the end of the invoke)", async () => {
    const before = await driftOf(version)
    const rows = [demoApplicant(2), demoApplicant(3), demoApplicant(4)]
    const invoked = endpoint.invocations()
    for (let i = 0; i < 2; i++) {
      const res = await edge.predict(rows, { entity: { user_id: `u-${i + 2}` } })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-served-by')).toBe('lambda')
    }
    expect(endpoint.invocations()).toBe(invoked + 2)
    // No wait: each invoke flushed its deltas before it answered.
    const after = await driftOf(version)
    expect({ rows: after.rows - before.rows, requests: after.health.requests - before.health.requests, errors: after.health.errors - before.health.errors })
      .toEqual({ rows: 6, requests: 2, errors: 0 })
  })

  it("is in the arm the canary controller reads (the backend monitor's window), though the backend served none of it", async () => {
    const monitor = new BackendMonitor({ baseUrl: stack.backend.url })
    const before = await monitor.arm(MODEL, version, 5)
    const res = await edge.predict([demoApplicant(5), demoApplicant(6)], { entity: { user_id: 'u-9' } })
    expect(res.headers.get('x-served-by')).toBe('lambda')
    const after = await monitor.arm(MODEL, version, 5)
    expect({ rows: after.rows - before.rows, requests: after.requests - before.requests }).toEqual({ rows: 2, requests: 1 })
    expect(after.prediction_counts.reduce((a, b) => a + b, 0) - before.prediction_counts.reduce((a, b) => a + b, 0)).toBe(2)
  })
})
