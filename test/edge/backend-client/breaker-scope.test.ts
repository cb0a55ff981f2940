import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { circuitBreakers } from '../../../edge/backend-client/circuit-breaker.ts'
import { HttpTransport } from '../../../edge/backend-client/http.ts'
import type { InferCall } from '../../../edge/backend-client/transport.ts'
import { Problem } from '../../../edge/problem.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { applicant } from '../../backend/support/applicants.ts'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'
import { edgeClient } from '../../support/client.ts'

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })
const answered = (version: number) => json(200, { model_name: 'credit-risk', model_version: String(version), id: 'x', parameters: {}, outputs: [] })
const timedOut = () => Promise.reject(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))

const call = (version: number, extra: Partial<InferCall> = {}): InferCall => ({
  model: 'credit-risk', version, request: { inputs: [] }, requestId: 'scope-1', deadlineAt: Date.now() + 10_000, ...extra,
})

const outcome = (promise: Promise<unknown>) => promise.then(() => 'answered', (err: unknown) => (err instanceof Problem ? err.detail : String(err)))

/** A backend whose answer depends on the URL and the body; counts what reaches it. */
const scripted = (answer: (url: string, body: { id?: string }) => Response | Promise<Response>) => {
  const seen: string[] = []
  const fetcher: typeof fetch = async (input, init) => {
    const url = String(input)
    seen.push(url)
    return answer(url, typeof init?.body === 'string' ? (JSON.parse(init.body) as { id?: string }) : {})
  }
  return { seen, fetch: fetcher }
}

describe('circuit breakers per backend target and model version', () => {
  it('a canary answering 503 "not ready" opens its own circuit, never the stable version\'s', async () => {
    const backend = scripted((url) => (url.includes('/versions/3/') ? json(503, { error: 'model "credit-risk" version 3 is not ready: warming up' }) : answered(2)))
    const transport = new HttpTransport({ baseUrl: 'http://backend', retries: 0, fetch: backend.fetch })
    for (let i = 0; i < 8; i++) await outcome(transport.infer(call(3)))
    expect(await outcome(transport.infer(call(3)))).toMatch(/circuit open/)
    const reached = backend.seen.length
    for (let i = 0; i < 5; i++) expect(await outcome(transport.infer(call(2)))).toBe('answered')
    expect(backend.seen.length).toBe(reached + 5)
  })

  it('shadow copies that fail or time out open the shadow\'s circuit, never that of the traffic clients get, on the same version', async () => {
    let n = 0
    const backend = scripted((_url, body) => (body.id?.endsWith(':shadow') ? (n++ % 2 === 0 ? json(500, { error: 'session failed' }) : timedOut()) : answered(1)))
    const transport = new HttpTransport({ baseUrl: 'http://backend', retries: 0, fetch: backend.fetch })
    for (let i = 0; i < 8; i++) await outcome(transport.infer(call(1, { shadow: true, request: { id: `r${i}:shadow`, inputs: [] } })))
    expect(await outcome(transport.infer(call(1, { shadow: true, request: { id: 'late:shadow', inputs: [] } })))).toMatch(/circuit open/)
    for (let i = 0; i < 5; i++) expect(await outcome(transport.infer(call(1, { request: { id: `p${i}`, inputs: [] } })))).toBe('answered')
  })

  it('the model list and metadata have a circuit of their own per target', async () => {
    const backend = scripted((url) => (url.endsWith('/infer') ? json(500, { error: 'broken' }) : json(200, { models: [{ name: 'credit-risk' }] })))
    const transport = new HttpTransport({ baseUrl: 'http://backend', retries: 0, fetch: backend.fetch })
    for (const version of [1, 2]) for (let i = 0; i < 6; i++) await outcome(transport.infer(call(version)))
    expect(await transport.models('list-1')).toEqual(['credit-risk'])

    const listing = scripted((url) => (url.endsWith('/infer') ? answered(2) : json(503, { error: 'restarting' })))
    const other = new HttpTransport({ baseUrl: 'http://backend', retries: 0, fetch: listing.fetch })
    for (let i = 0; i < 6; i++) await outcome(other.models('list-2'))
    expect(await outcome(other.models('list-3'))).toMatch(/circuit open/)
    expect(await outcome(other.infer(call(2)))).toBe('answered')
  })

  it('keeps a bounded number of breakers, forgetting the least recently used', () => {
    const breakers = circuitBreakers({ maxBreakers: 2, failureThreshold: 1, cooldownMs: 60_000, now: () => 0 })
    breakers('a').failure()
    expect(breakers('a').state).toBe('open')
    breakers('b').failure()
    breakers('a')
    breakers('c')
    // 'b' was used least recently: it went, and comes back closed.
    expect(breakers('a').state).toBe('open')
    expect(breakers('b').state).toBe('closed')
  })
})

describe('predict with a failing shadow, through the real backend', () => {
  let backend: BackendProcess
  let key: string

  beforeAll(async () => {
    backend = await startBackend({ MODEL_REPOSITORY: 'models' })
    key = generateApiKey('test')
  })

  afterAll(async () => {
    await backend?.stop()
  })

  it('keeps answering clients, on the shadow\'s version too, after a run of shadow copies failed or timed out', async () => {
    // The real backend, except that shadow copies are held (slow), then fail: a 500, or no answer in time.
    const heldShadows: Array<() => void> = []
    const slowFailingShadows: typeof fetch = (input, init) => {
      const id = typeof init?.body === 'string' ? (JSON.parse(init.body) as { id?: string }).id : undefined
      if (!id?.endsWith(':shadow')) return fetch(input, init)
      return new Promise((resolve, reject) => {
        const fail = heldShadows.length % 2 === 0 ? () => resolve(json(500, { error: 'session failed' })) : () => reject(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
        heldShadows.push(fail)
      })
    }
    const transport = new HttpTransport({ baseUrl: backend.url, fetch: slowFailingShadows })
    const rollouts = new MemoryRolloutStore()
    await rollouts.compareAndSet('credit-risk', 0, {
      salt: 'shadow-scope', arms: [{ variant: 'stable', version: 2, weight: 100 }], pinnable: [1], shadow: { version: 1, percent: 100 },
    })
    const app = createApp({
      parts: { keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 10_000 }]), transport, catalog: new ModelCatalog({ transport }), rollouts },
    })
    const background: Promise<unknown>[] = []
    const executionCtx = { waitUntil: (p: Promise<unknown>) => void background.push(p), passThroughOnException: () => {}, props: {} }
    const { account_age_months: _a, num_products: _n, ...instance } = applicant(1)
    const edge = edgeClient((request) => app.request(request, undefined, { BACKEND_URL: backend.url }, executionCtx), { headers: { authorization: `Bearer ${key}` } })

    for (let i = 0; i < 10; i++) expect((await edge.predict([instance], { entity: { user_id: `user-${i}` } })).status).toBe(200)
    expect(heldShadows).toHaveLength(10)
    for (const fail of heldShadows) fail()
    await Promise.all(background)

    expect((await edge.predict([instance], { entity: { user_id: 'user-after' } })).status).toBe(200)
    const pinned = await edge.predict([instance], { entity: { user_id: 'user-pinned' }, version: 1 })
    expect(pinned.status).toBe(200)
    expect(pinned.headers.get('x-model-version')).toBe('1')
  })

  it('reads of unknown models never make the circuit of a failing version forget it is open', async () => {
    const backend = scripted((url) => (url.endsWith('/infer') ? json(500, { error: 'session failed' }) : json(404, { error: 'unknown model' })))
    const transport = new HttpTransport({ baseUrl: 'http://backend', retries: 0, fetch: backend.fetch })
    for (let i = 0; i < 5; i++) await outcome(transport.infer(call(1)))
    expect(await outcome(transport.infer(call(1)))).toMatch(/circuit open/)
    // More distinct read URLs than the breakers kept (1,024): any predict-scoped client can send them.
    for (let i = 0; i < 1_030; i++) await outcome(transport.read(`/v2/models/nosuch-${i}`, `read-${i}`))
    const reached = backend.seen.length
    expect(await outcome(transport.infer(call(1)))).toMatch(/circuit open/)
    expect(backend.seen.length).toBe(reached)
  })

  it('reads that fail, past the bound, still leave the infer circuits alone', async () => {
    const backend = scripted(() => json(500, { error: 'down' }))
    const transport = new HttpTransport({ baseUrl: 'http://backend', retries: 0, fetch: backend.fetch })
    for (let i = 0; i < 5; i++) await outcome(transport.infer(call(1)))
    for (let i = 0; i < 1_030; i++) await outcome(transport.read(`/v2/models/nosuch-${i}`, `read-${i}`))
    expect(await outcome(transport.infer(call(1)))).toMatch(/circuit open/)
  })

  it('forgets breakers with nothing to remember (closed, no failure) before any that has failed', () => {
    const breakers = circuitBreakers({ maxBreakers: 2, failureThreshold: 1, cooldownMs: 60_000, now: () => 0 })
    breakers('open').failure()
    for (const key of ['a', 'b', 'c', 'd']) breakers(key).success()
    expect(breakers('open').state).toBe('open')
  })
})
