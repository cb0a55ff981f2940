import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { circuitBreakers } from '../../../edge/backend-client/circuit-breaker.ts'
import { HttpTransport } from '../../../edge/backend-client/http.ts'
import { Problem } from '../../../edge/problem.ts'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../../backend/support/fixture-repository.ts'
import { creditRequest } from '../../backend/support/applicants.ts'
import { freePort } from '../../support/ports.ts'

let repo: FixtureRepository
let backend: BackendProcess

const call = (version: number, deadlineMs = 5_000) => ({
  model: 'credit-risk', version, request: creditRequest(2) as never, requestId: 'edge-test-1', deadlineAt: Date.now() + deadlineMs,
})

beforeAll(async () => {
  repo = await createFixtureRepository()
  await repo.addModel('parked', {
    maxBatchSize: 1024,
    config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 10_000_000, max_queue_size: 64 }),
  })
  // A Triton user's first try: config.pbtxt's fields written as JSON.
  await repo.addModel('triton-shaped', {
    config: (c) => {
      for (const key of Object.keys(c)) if (key !== 'name' && key !== 'max_batch_size') delete c[key]
      Object.assign(c, { platform: 'onnxruntime_onnx', input: [{ name: 'features', data_type: 'TYPE_FP32', dims: [4] }], output: [{ name: 'probabilities', data_type: 'TYPE_FP32', dims: [2] }] })
    },
  })
  backend = await startBackend({ MODEL_REPOSITORY: repo.root })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

describe('HttpTransport against the real backend', () => {
  it('forwards an infer call to the named version and returns its answer', async () => {
    const transport = new HttpTransport({ baseUrl: backend.url })
    const v1 = await transport.infer(call(1))
    expect(v1).toMatchObject({ model_name: 'credit-risk', model_version: '1' })
    expect(v1.outputs[0].shape).toEqual([2, 2])
    expect((await transport.infer(call(2))).model_version).toBe('2')
  })

  it('reads model metadata with the feature spec', async () => {
    const metadata = await new HttpTransport({ baseUrl: backend.url }).metadata('credit-risk', 'edge-test-2')
    expect(metadata.versions).toEqual(['1', '2'])
    expect((metadata.features as { input: string }).input).toBe('features')
  })

  it('maps an unknown model to a 404 problem', async () => {
    const error = await new HttpTransport({ baseUrl: backend.url }).metadata('nope', 'x').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Problem)
    expect((error as Problem).status).toBe(404)
  })

  it('passes on a refused config.json as a permanent 409 carrying the backend\'s reason, on infer and on metadata (not a 503 that reads as transient)', async () => {
    const transport = new HttpTransport({ baseUrl: backend.url })
    const request = { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32' as const, data: [1, 2, 3, 4] }] }
    const inferred = await transport.infer({ model: 'triton-shaped', version: 1, request, requestId: 'edge-test-409', deadlineAt: Date.now() + 5_000 }).catch((e: unknown) => e)
    const described = await transport.metadata('triton-shaped', 'edge-test-409b').catch((e: unknown) => e)
    for (const error of [inferred, described]) {
      expect(error).toBeInstanceOf(Problem)
      const problem = error as Problem
      expect([problem.status, problem.extra.headers?.['retry-after']]).toEqual([409, undefined])
      expect(problem.detail).toMatch(/^inference tier: model "triton-shaped" configuration refused: config\.json is invalid: .*platform/)
      expect(problem.detail).toMatch(/inputs.*\(this is Triton's config\.pbtxt shape; here: "platform": "onnxruntime"/)
    }
  })

  it('passes the deadline to the backend, whose queue answers 504 when it expires', async () => {
    const transport = new HttpTransport({ baseUrl: backend.url })
    const request = { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32' as const, data: [1, 2, 3, 4] }] }
    const error = await transport.infer({ model: 'parked', version: 1, request, requestId: 'edge-test-3', deadlineAt: Date.now() + 200 }).catch((e: unknown) => e)
    expect((error as Problem).status).toBe(504)
  })

  it('passes on a request larger than the queue could ever hold as a permanent 413, not as a 502 or a retryable refusal', async () => {
    const transport = new HttpTransport({ baseUrl: backend.url })
    const request = { inputs: [{ name: 'features', shape: [65, 4], datatype: 'FP32' as const, data: Array.from({ length: 260 }, () => 0.5) }] }
    const error = (await transport.infer({ model: 'parked', version: 1, request, requestId: 'edge-test-4', deadlineAt: Date.now() + 5_000 }).catch((e: unknown) => e)) as Problem
    expect(error).toBeInstanceOf(Problem)
    expect([error.status, error.title, error.extra.headers?.['retry-after']]).toEqual([413, 'Content Too Large', undefined])
    expect(error.detail).toMatch(/max_queue_size 64/)
  })

  it('answers 503 when the backend is unreachable, then stops trying once the circuit opens', async () => {
    const port = await freePort()
    let attempts = 0
    const counting: typeof fetch = (input, init) => {
      attempts++
      return fetch(input, init)
    }
    const transport = new HttpTransport({ baseUrl: `http://127.0.0.1:${port}`, retries: 1, breakers: circuitBreakers({ failureThreshold: 3, cooldownMs: 60_000 }), fetch: counting })
    const first = await transport.infer(call(2)).catch((e: unknown) => e)
    expect((first as Problem).status).toBe(503)
    expect((first as Problem).detail).toBe('inference tier unreachable')
    expect(attempts).toBe(2)
    await transport.infer(call(2)).catch(() => undefined)
    const refused = await transport.infer(call(2)).catch((e: unknown) => e)
    expect((refused as Problem).detail).toMatch(/circuit open/)
    expect((refused as Problem).extra.headers?.['retry-after']).toMatch(/^[1-9][0-9]*$/)
    expect(attempts).toBe(3)
  })
})

describe('HttpTransport refusing on an open circuit', () => {
  it('sends the breaker\'s exact remaining cooldown as Retry-After', async () => {
    let now = 0
    const failing: typeof fetch = async () => new Response(JSON.stringify({ error: 'session failed' }), { status: 500 })
    const transport = new HttpTransport({ baseUrl: 'http://backend.test', retries: 0, breakers: circuitBreakers({ failureThreshold: 1, cooldownMs: 5_000, now: () => now }), fetch: failing, now: () => now })
    const at = (deadlineMs: number) => ({ ...call(2), deadlineAt: now + deadlineMs })
    await expect(transport.infer(at(1_000))).rejects.toMatchObject({ status: 502 })
    now = 1_500
    // 3.5 s of the 5 s cooldown remain: Retry-After says 4.
    await expect(transport.infer(at(1_000))).rejects.toMatchObject({ status: 503, extra: { headers: { 'retry-after': '4' } } })
  })
})
