import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { InferResponse } from '../../../shared/protocol.ts'
import { circuitBreakers } from '../../../edge/backend-client/circuit-breaker.ts'
import { FallbackTransport } from '../../../edge/backend-client/fallback.ts'
import { BackendRefusal, HttpTransport, Unanswered } from '../../../edge/backend-client/http.ts'
import { LambdaTransport } from '../../../edge/backend-client/lambda.ts'
import type { BackendModelMetadata, InferCall, Transport } from '../../../edge/backend-client/transport.ts'
import { Problem } from '../../../edge/problem.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../../dev/lambda-endpoint/server.ts'
import { post, startBackend, until, type BackendProcess } from '../../backend/support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../../backend/support/fixture-repository.ts'
import { creditRequest } from '../../backend/support/applicants.ts'
import { setProcessEnv } from '../../support/process-env.ts'
import { manualClock } from '../pipeline/enrich/support.ts'

const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let repo: FixtureRepository
let backend: BackendProcess
let endpoint: LambdaEndpoint
let parked: Array<Promise<unknown>> = []

const lambda = () =>
  new LambdaTransport({ functionName: FUNCTION, region: 'eu-west-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, endpoint: endpoint.url })

const call = (model = 'credit-risk', request: Record<string, unknown> = creditRequest(3, 5, { id: 'fallback-1' }), deadlineAt = Date.now() + 10_000): InferCall => ({
  model, version: model === 'credit-risk' ? 2 : 1, request: request as never, requestId: 'fallback-1', deadlineAt,
})

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a refusal') }, (e: unknown) => e as Problem)

const depth = async (model: string) => {
  const text = await (await fetch(`${backend.url}/metrics`)).text()
  const match = new RegExp(`edge_infer_backend_queue_depth_rows\\{model="${model}",version="1"\\} (\\d+)`).exec(text)
  return match ? Number(match[1]) : 0
}

/** Same rows of class probabilities, up to float noise. */
const expectSameOutputs = (actual: InferResponse, expected: InferResponse) => {
  expect(actual.outputs.map((o) => [o.name, o.shape])).toEqual(expected.outputs.map((o) => [o.name, o.shape]))
  actual.outputs.forEach((o, i) => o.data.forEach((v, j) => expect(v as number).toBeCloseTo(expected.outputs[i].data[j] as number, 6)))
}

beforeAll(async () => {
  repo = await createFixtureRepository()
  // Requests sit in this queue for 10 s: two queued rows fill it, the next request gets 429.
  await repo.addModel('parked', {
    maxBatchSize: 1024,
    config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 10_000_000, preferred_batch_sizes: [], max_queue_size: 2 }),
  })
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: repo.root, LOG_LEVEL: 'silent' })
  backend = await startBackend({ MODEL_REPOSITORY: repo.root })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
})

afterAll(async () => {
  await backend?.stop()
  await Promise.allSettled(parked)
  await endpoint?.close()
  await repo?.remove()
  restoreEnv?.()
})

describe('FallbackTransport: the real backend first, the Lambda tier when it refuses', () => {
  let attempts = 0
  let http: HttpTransport
  let transport: FallbackTransport
  let fromBackend: InferResponse

  beforeAll(() => {
    const counting: typeof fetch = (input, init) => {
      attempts++
      return fetch(input, init)
    }
    http = new HttpTransport({ baseUrl: backend.url, retries: 1, breakers: circuitBreakers({ failureThreshold: 2, cooldownMs: 600_000 }), fetch: counting })
    transport = new FallbackTransport(http, lambda())
  })

  it('answers from the backend while it is up, marked served_by backend', async () => {
    fromBackend = await transport.infer(call())
    expect(fromBackend).toMatchObject({ model_name: 'credit-risk', model_version: '2', id: 'fallback-1', parameters: { served_by: 'backend' } })
    expect(endpoint.invocations()).toBe(0)
    expect((await transport.metadata('credit-risk', 'fallback-meta')).versions).toEqual(['1', '2'])
  })

  it('sends a call the backend refuses with 429 (queue full) to Lambda', async () => {
    const rows = { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }
    parked = [post(`${backend.url}/v2/models/parked/infer`, rows), post(`${backend.url}/v2/models/parked/infer`, rows)]
    await until(async () => (await depth('parked')) === 2)
    const direct = await failure(http.infer(call('parked', rows)))
    expect(direct).toBeInstanceOf(BackendRefusal)
    expect(direct.status).toBe(429)

    const before = endpoint.invocations()
    const answer = await transport.infer(call('parked', { ...rows, id: 'fallback-429' }))
    expect(answer).toMatchObject({ model_name: 'parked', model_version: '1', id: 'fallback-429', parameters: { served_by: 'lambda', batch_reason: 'single' } })
    expect(answer.outputs[0].shape).toEqual([1, 2])
    expect(endpoint.invocations()).toBe(before + 1)
  })

  it('backend killed: the circuit opens and Lambda answers with the predictions the backend gave', async () => {
    await backend.stop()
    const before = attempts
    const first = await transport.infer(call())
    expect(first.parameters.served_by).toBe('lambda')
    expectSameOutputs(first, fromBackend)
    // Two refused connections (one retry) opened the circuit...
    expect(attempts - before).toBe(2)
    // ...so the next calls go straight to Lambda without touching the backend.
    for (let i = 0; i < 3; i++) {
      const next = await transport.infer(call())
      expect(next.parameters.served_by).toBe('lambda')
      expectSameOutputs(next, fromBackend)
    }
    expect(attempts - before).toBe(2)
  })

  it('keeps describing models from the backend\'s last answer while the backend is down', async () => {
    const stale = await transport.metadata('credit-risk', 'fallback-meta-2')
    expect(stale.versions).toEqual(['1', '2'])
    const never = await failure(transport.metadata('never-described', 'fallback-meta-3'))
    expect(never.status).toBe(503)
    // Without a fallback tier there is nothing to keep answering with.
    expect((await failure(new FallbackTransport(http, undefined).metadata('credit-risk', 'x'))).status).toBe(503)
  })

  it('passes the refusal on when there is no fallback tier', async () => {
    const alone = new FallbackTransport(http, undefined)
    const refusal = await failure(alone.infer(call()))
    expect(refusal).toBeInstanceOf(BackendRefusal)
    expect(refusal.status).toBe(503)
    expect(refusal.detail).toMatch(/circuit open/)
  })
})

/** A tier that answers or refuses as told, and records what it was asked. */
class ScriptedTransport implements Transport {
  readonly calls: InferCall[] = []
  constructor(readonly name: string, private readonly answer: (call: InferCall) => Promise<InferResponse>) {}
  infer(call: InferCall): Promise<InferResponse> {
    this.calls.push(call)
    return this.answer(call)
  }
  async metadata(): Promise<BackendModelMetadata> {
    throw new BackendRefusal(503, 'no metadata here')
  }
  async models(): Promise<string[]> {
    return [this.name]
  }
}

const ok = (id: string): InferResponse => ({ model_name: 'm', id, parameters: { queue_us: 0, compute_us: 0, batch_size: 1, batch_reason: 'single' }, outputs: [] })
const refuse = (status: 429 | 503 | 504, detail = `refused ${status}`) => async (): Promise<InferResponse> => {
  throw new BackendRefusal(status, detail, '7')
}

describe('FallbackTransport decisions', () => {
  it('does not send on a verdict on the request (404, 400, 502)', async () => {
    for (const error of [new Problem(404, 'Not Found', 'no'), new Problem(400, 'Bad Request', 'bad'), new Problem(502, 'Bad Gateway', 'broken')]) {
      const fallback = new ScriptedTransport('lambda', async (c) => ok(c.requestId))
      const transport = new FallbackTransport(new ScriptedTransport('http', async () => { throw error }), fallback)
      expect(await failure(transport.infer(call()))).toBe(error)
      expect(fallback.calls).toHaveLength(0)
    }
  })

  it('never sends a shadow copy to the fallback: it would take capacity from the traffic clients get', async () => {
    const fallback = new ScriptedTransport('lambda', async (c) => ok(c.requestId))
    const transport = new FallbackTransport(new ScriptedTransport('http', refuse(503)), fallback)
    expect((await failure(transport.infer({ ...call(), shadow: true }))).status).toBe(503)
    expect(fallback.calls).toHaveLength(0)
    expect((await transport.infer(call())).parameters.served_by).toBe('lambda')
  })

  it('sends a 504 on while the share of the deadline kept for the fallback is left, not once the deadline is spent', async () => {
    const clock = manualClock()
    const deadlineAt = clock.now() + 1_000
    const fallback = new ScriptedTransport('lambda', async (c) => ok(c.requestId))
    const timedOut = new FallbackTransport(new ScriptedTransport('http', refuse(504)), fallback, { now: clock.now })
    expect((await timedOut.infer(call('credit-risk', undefined, deadlineAt))).parameters.served_by).toBe('lambda')

    const late = new BackendRefusal(504, 'late')
    const spent = new FallbackTransport(new ScriptedTransport('http', async () => {
      clock.advance(1_000)
      throw late
    }), fallback, { now: clock.now })
    const refusal = await failure(spent.infer(call('credit-risk', undefined, deadlineAt)))
    expect(refusal.status).toBe(504)
    expect(fallback.calls).toHaveLength(1)
  })

  it('gives the primary the deadline less the fallback\'s share, the fallback the whole deadline, and marks each concurrent answer on its own', async () => {
    const clock = manualClock()
    const deadlineAt = clock.now() + 10_000
    const fallback = new ScriptedTransport('lambda', async (c) => ok(c.requestId))
    let n = 0
    const primary = new ScriptedTransport('http', async (c) => (n++ % 2 === 0 ? ok(c.requestId) : refuse(429)()))
    const transport = new FallbackTransport(primary, fallback, { fallbackShare: 0.3, now: clock.now })
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => transport.infer({ ...call('credit-risk', undefined, deadlineAt), requestId: `r${i}` })))
    expect(answers.map((a) => [a.id, a.parameters.served_by])).toEqual([
      ['r0', 'backend'], ['r1', 'lambda'], ['r2', 'backend'], ['r3', 'lambda'], ['r4', 'backend'], ['r5', 'lambda'],
    ])
    expect(new Set(primary.calls.map((c) => c.deadlineAt))).toEqual(new Set([deadlineAt - 3_000]))
    expect(new Set(fallback.calls.map((c) => c.deadlineAt))).toEqual(new Set([deadlineAt]))
  })

  it('when the fallback fails too, answers the primary\'s refusal (with its Retry-After), or the fallback\'s verdict on the request', async () => {
    const down = new FallbackTransport(new ScriptedTransport('http', refuse(429, 'queue full')), new ScriptedTransport('lambda', refuse(503, 'Lambda tier unreachable')))
    const both = await failure(down.infer(call()))
    expect(both).toBeInstanceOf(BackendRefusal)
    expect(both.status).toBe(429)
    expect(both.extra.headers?.['retry-after']).toBe('7')
    expect(both.detail).toBe('queue full; the fallback tier failed too: Lambda tier unreachable')

    expect(both).not.toBeInstanceOf(Unanswered)
    // A primary that never answered stays unanswered when the fallback fails too: the edge counts that call.
    const unreachable = new FallbackTransport(new ScriptedTransport('http', async () => { throw new Unanswered(503, 'inference tier unreachable', '1') }), new ScriptedTransport('lambda', refuse(503, 'Lambda tier unreachable')))
    const unanswered = await failure(unreachable.infer(call()))
    expect(unanswered).toBeInstanceOf(Unanswered)
    expect([unanswered.status, unanswered.detail]).toEqual([503, 'inference tier unreachable; the fallback tier failed too: Lambda tier unreachable'])

    const notFound = new Problem(404, 'Not Found', 'Lambda tier: unknown model')
    const verdict = new FallbackTransport(new ScriptedTransport('http', refuse(503)), new ScriptedTransport('lambda', async () => { throw notFound }))
    expect(await failure(verdict.infer(call()))).toBe(notFound)
  })
})
