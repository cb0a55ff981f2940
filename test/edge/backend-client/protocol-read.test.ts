import { describe, expect, it } from 'vitest'
import { HttpTransport } from '../../../edge/backend-client/http.ts'
import { Problem } from '../../../edge/problem.ts'

const answering = (status: number, body: unknown, headers: Record<string, string> = {}): typeof fetch => async () =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

const refusalOf = (promise: Promise<unknown>) => promise.then(() => expect.unreachable('the read was refused'), (err: unknown) => err as Problem)

describe('HttpTransport.read (metadata, readiness and health passed on)', () => {
  it('passes a "not ready" 503 on as the backend answered it', async () => {
    const reader = new HttpTransport({ baseUrl: 'http://backend.test', retries: 0, fetch: answering(503, { name: 'm', ready: false }) })
    expect(await reader.read('/v2/models/m/ready', 'r-1')).toEqual({ status: 503, body: { name: 'm', ready: false } })
  })

  it('maps any other refusal as infer\'s are: a 503 stays a refusal with its Retry-After, a 500 is the tier\'s fault', async () => {
    const overloaded = new HttpTransport({ baseUrl: 'http://backend.test', retries: 0, fetch: answering(503, { error: 'draining' }, { 'retry-after': '3' }) })
    const refusal = await refusalOf(overloaded.read('/v2/models/m', 'r-2'))
    expect(refusal).toMatchObject({ status: 503, detail: 'inference tier: draining', extra: { headers: { 'retry-after': '3' } } })
    const broken = new HttpTransport({ baseUrl: 'http://backend.test', retries: 0, fetch: answering(500, { error: 'boom' }) })
    expect(await refusalOf(broken.read('/v2/health/ready', 'r-3'))).toMatchObject({ status: 502 })
  })

  it('gives up at its timeout with a 504 instead of waiting on a backend that never answers', async () => {
    const hanging: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)))
    const reader = new HttpTransport({ baseUrl: 'http://backend.test', retries: 0, fetch: hanging })
    expect(await refusalOf(reader.read('/v2/health/live', 'r-4'))).toMatchObject({ status: 504 })
  }, 10_000)
})
