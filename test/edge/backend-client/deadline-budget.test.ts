import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { InferResponse } from '../../../shared/protocol.ts'
import { FallbackTransport } from '../../../edge/backend-client/fallback.ts'
import { HttpTransport, Unanswered } from '../../../edge/backend-client/http.ts'
import type { BackendModelMetadata, InferCall, Transport } from '../../../edge/backend-client/transport.ts'
import { Problem } from '../../../edge/problem.ts'
import { manualClock } from '../pipeline/enrich/support.ts'

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/** A backend that takes `latencyMs` per attempt (or times out at the deadline it was sent), then answers `status`. */
const slowBackend = (clock: ReturnType<typeof manualClock>, latencyMs: number, status: number) => {
  const sentDeadlines: number[] = []
  const fetcher: typeof fetch = async (_input, init) => {
    const budget = Number(new Headers(init?.headers).get('x-request-deadline-ms'))
    sentDeadlines.push(budget)
    if (latencyMs > budget) {
      clock.advance(budget)
      throw new DOMException('The operation was aborted due to timeout', 'TimeoutError')
    }
    clock.advance(latencyMs)
    return json(status, status === 200 ? { model_name: 'm', id: 'x', parameters: {}, outputs: [] } : { error: 'not ready' })
  }
  return { sentDeadlines, fetch: fetcher }
}

/** The fallback tier: answers at once, and records how much of the deadline it was left. */
class RecordingTier implements Transport {
  readonly name = 'lambda'
  readonly leftAtCall: number[] = []
  constructor(private readonly now: () => number) {}
  async infer(call: InferCall): Promise<InferResponse> {
    this.leftAtCall.push(call.deadlineAt - this.now())
    return { model_name: 'm', id: call.requestId, parameters: { queue_us: 0, compute_us: 0, batch_size: 1, batch_reason: 'single' }, outputs: [] }
  }
  async metadata(): Promise<BackendModelMetadata> {
    throw new Error('the fallback serves no metadata')
  }
  async models(): Promise<string[]> {
    return []
  }
}

const call = (deadlineAt: number): InferCall => ({ model: 'm', version: 1, request: { inputs: [] }, requestId: 'deadline-1', deadlineAt })

describe('deadlines across retries and the fallback', () => {
  it('sends each retry what remains of the deadline, not the original', async () => {
    const clock = manualClock()
    const backend = slowBackend(clock, 300, 503)
    const transport = new HttpTransport({ baseUrl: 'http://backend', retries: 2, fetch: backend.fetch, now: clock.now })
    await transport.infer(call(clock.now() + 1_000)).catch(() => undefined)
    expect(backend.sentDeadlines).toEqual([1_000, 700, 400])
  })

  it('counts from when the request arrived, not from when it is forwarded', async () => {
    const clock = manualClock()
    const arrived = clock.now()
    clock.advance(250)
    const backend = slowBackend(clock, 10, 200)
    await new HttpTransport({ baseUrl: 'http://backend', fetch: backend.fetch, now: clock.now }).infer(call(arrived + 1_000))
    expect(backend.sentDeadlines).toEqual([750])
  })

  it('keeps a share of the budget for the fallback when a slow 503 and its retry would spend it all', async () => {
    const clock = manualClock()
    const arrived = clock.now()
    const backend = slowBackend(clock, 500, 503)
    const lambda = new RecordingTier(clock.now)
    const primary = new HttpTransport({ baseUrl: 'http://backend', retries: 1, fetch: backend.fetch, now: clock.now })
    const transport = new FallbackTransport(primary, lambda, { fallbackShare: 0.25, now: clock.now })
    const answer = await transport.infer(call(arrived + 1_000))
    expect(answer.parameters.served_by).toBe('lambda')
    // The primary had 750 ms: a 503 after 500, a retry with the 250 left that timed out.
    expect(backend.sentDeadlines).toEqual([750, 250])
    expect(lambda.leftAtCall).toEqual([250])
  })
})

/** A real HTTP backend that sends its status and headers, then `bodyAfterMs` later (or never) its body. */
const stallingBackend = async (bodyAfterMs: number | undefined, body: string) => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) })
    res.flushHeaders()
    if (bodyAfterMs !== undefined) setTimeout(() => res.end(body), bodyAfterMs)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())).then(() => undefined) }
}

const answer = JSON.stringify({ model_name: 'm', id: 'x', parameters: {}, outputs: [{ name: 'p', datatype: 'FP32', shape: [1], data: [0.5] }] })
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length

describe('the deadline bounds the whole answer, body included', () => {
  it('answers 504 at the deadline when the backend sends its headers and then stalls its body', async () => {
    const backend = await stallingBackend(undefined, answer)
    try {
      const transport = new HttpTransport({ baseUrl: backend.url, retries: 0 })
      const refused = await transport.infer(call(Date.now() + 300)).then(() => undefined, (err: unknown) => err)
      expect(refused).toBeInstanceOf(Unanswered)
      expect((refused as Unanswered).status).toBe(504)
    } finally {
      backend.close().catch(() => undefined)
    }
  })

  it('reads a body that arrives within the deadline, and leaves no timer running once the call is answered', async () => {
    const backend = await stallingBackend(50, answer)
    try {
      const transport = new HttpTransport({ baseUrl: backend.url })
      const before = timers()
      const answered = await Promise.all(Array.from({ length: 20 }, () => transport.infer(call(Date.now() + 60_000))))
      expect(answered.map((a) => a.outputs[0].data)).toEqual(Array.from({ length: 20 }, () => [0.5]))
      // A timer per call left until its 60 s deadline would show here as 20 more.
      expect(timers()).toBeLessThanOrEqual(before)
    } finally {
      await backend.close()
    }
  })
})

describe('a backend answer that is not the protocol', () => {
  it('turns a 200 whose body is not JSON into a 502 problem naming the tier, on metadata and on the model list', async () => {
    const transport = new HttpTransport({ baseUrl: 'http://backend', fetch: async () => new Response('<html>proxy error page</html>', { status: 200 }) })
    for (const read of [() => transport.metadata('m', 'bad-body-1'), () => transport.models('bad-body-2')]) {
      const refused = await read().then(() => undefined, (err: unknown) => err)
      expect(refused).toBeInstanceOf(Problem)
      expect((refused as Problem).status).toBe(502)
      expect((refused as Problem).detail).toMatch(/inference tier.*not JSON/)
    }
  })
})
