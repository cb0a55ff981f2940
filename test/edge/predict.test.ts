import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../edge/backend-client/catalog.ts'
import { HttpTransport } from '../../edge/backend-client/http.ts'
import { Problem } from '../../edge/problem.ts'
import { MemoryRolloutStore } from '../../edge/stores/rollouts/memory.ts'
import { startBackend, type BackendProcess } from '../backend/support/backend-process.ts'
import { applicant } from '../backend/support/applicants.ts'
import { edgeClient, type EdgeClient } from '../support/client.ts'

let backend: BackendProcess
let key: string
let app: ReturnType<typeof createApp>
let env: Record<string, string>
let edge: EdgeClient

/** An applicant as a client sends it: request features only, the user id as the entity. */
const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}


beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  key = generateApiKey('test')
  const store = new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1000 }])
  app = createApp({ parts: { keys: store } })
  env = { BACKEND_URL: backend.url, MAX_INSTANCES: '64' }
  edge = edgeClient((request) => app.request(request, undefined, env), { headers: { authorization: `Bearer ${key}` } })
})

afterAll(async () => {
  await backend?.stop()
})

describe('POST /v1/models/{model}/predict through the real backend', () => {
  it('answers labelled predictions from the newest version, with routing and timing headers', async () => {
    const res = await edge.predict({ instances: [instance(1), instance(2), instance(3)], entity: { user_id: 'u-1' } }, { headers: { 'x-request-id': 'predict-test-0001' } })
    expect(res.status).toBe(200)
    const body = res.body
    expect(body).toMatchObject({ model: 'credit-risk', version: '2', variant: 'stable', request_id: 'predict-test-0001' })
    expect(body.predictions).toHaveLength(3)
    for (const p of body.predictions) {
      expect(['low_risk', 'high_risk']).toContain(p.label)
      expect(p.scores.low_risk + p.scores.high_risk).toBeCloseTo(1, 5)
      expect(p.label).toBe(p.scores.high_risk >= 0.5 ? 'high_risk' : 'low_risk')
      expect(p.probability).toBe(p.scores[p.label])
    }
    expect(res.headers.get('x-model-version')).toBe('2')
    expect(res.headers.get('x-variant')).toBe('stable')
    expect(res.headers.get('x-input-normalized')).toBe('0')
    expect(res.headers.get('server-timing')).toMatch(/^edge;dur=\d+, backend;dur=\d+$/)
    expect(res.headers.get('ratelimit-limit')).toBe('1000')
  })

  it('enriches instances with the entity features of the user, defaults for an unknown user', async () => {
    const known = (await edge.predict({ instances: [instance(7)], entity: { user_id: 'u-1' } })).body
    const unknown = (await edge.predict({ instances: [instance(7)], entity: { user_id: 'nobody' } })).body
    expect(known.predictions[0].scores.high_risk).not.toBeCloseTo(unknown.predictions[0].scores.high_risk, 6)
  })

  it('computes identical instances once and fans the answer back out', async () => {
    const res = await edge.predict({ instances: [instance(5), instance(6), instance(5)], entity: { user_id: 'u-2' } })
    const body = res.body
    expect(body.predictions[0]).toEqual(body.predictions[2])
    expect(body.predictions[0]).not.toEqual(body.predictions[1])
  })

  it('serves a pinned version, and refuses unknown or malformed pins', async () => {
    const pinned = await edge.predict({ instances: [instance(1)], entity: { user_id: 'u-3' } }, { version: 1 })
    expect(pinned.status).toBe(200)
    expect(pinned.body.version).toBe('1')
    const unknown = await edge.predict({ instances: [instance(1)], entity: { user_id: 'u-3' } }, { version: 9 })
    expect(unknown.status).toBe(404)
    expect(unknown.error).toMatchObject({ status: 404, detail: expect.stringMatching(/no version 9/) })
    expect((await edge.predict({ instances: [instance(1)], entity: { user_id: 'u-3' } }, { headers: { 'x-model-version': 'latest' } })).status).toBe(400)
  })

  it('counts and applies normalization fixes', async () => {
    const messy = { ...instance(1), region: ' north', age: '41' }
    const res = await edge.predict({ instances: [messy], entity: { user_id: 'u-4' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-input-normalized')).toBe('2')
  })

  it('logs one line per request with the key name and its normalization count, never the key', async () => {
    const lines: string[] = []
    const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)))
    try {
      await edge.predict({ instances: [{ ...instance(2), age: '30', housing: 'rent ' }], entity: { user_id: 'u-9' } }, { headers: { 'x-request-id': 'log-test-00000001' } })
    } finally {
      spy.mockRestore()
    }
    const entry = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.request_id === 'log-test-00000001')
    expect(entry).toMatchObject({ msg: 'request', caller: 'web', status: 200, normalized_fixes: 2, model: 'credit-risk', version: 2, variant: 'stable' })
    expect(lines.join('\n')).not.toContain(key)
  })

  it('refuses invalid instances with every field error, before the backend is asked', async () => {
    const res = await edge.predict({ instances: [{ ...instance(1), age: 17.5 }, { ...instance(2), income: -1, colour: 'red' }], entity: { user_id: 'u-5' } })
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    const problem = res.error!
    expect(problem.errors!.map((e) => e.path).sort()).toEqual(['instances[0].age', 'instances[1].colour', 'instances[1].income'])
  })

  it('refuses a request without a key with 401 and a challenge', async () => {
    const res = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }, env)
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="edge-infer"/)
  })

  it('answers 404 for a model the backend does not have', async () => {
    const res = await app.request('/v1/models/nope/predict', {
      method: 'POST', body: JSON.stringify({ instances: [{}] }), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    }, env)
    expect(res.status).toBe(404)
  })

  it('answers 503 with Retry-After when the backend is unreachable', async () => {
    const down = createApp({ parts: { keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1000 }]) } })
    const res = await down.request('/v1/models/credit-risk/predict', {
      method: 'POST', body: JSON.stringify({ instances: [instance(1)], entity: { user_id: 'u' } }), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    }, { BACKEND_URL: 'http://127.0.0.1:9' })
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
    expect(await res.json()).toMatchObject({ status: 503, title: 'Service Unavailable' })
  })

  it('names the version it routed to on a refusal that comes after routing', async () => {
    const real = new HttpTransport({ baseUrl: backend.url })
    const overloaded = {
      name: 'overloaded',
      models: (requestId: string) => real.models(requestId),
      metadata: (model: string, requestId: string) => real.metadata(model, requestId),
      infer: async () => {
        throw new Problem(503, 'Service Unavailable', 'the inference tier is saturated', { headers: { 'retry-after': '2' } })
      },
    }
    const saturated = createApp({
      parts: { keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1000 }]), transport: overloaded, catalog: new ModelCatalog({ transport: real }), rollouts: new MemoryRolloutStore() },
    })
    const res = await saturated.request('/v1/models/credit-risk/predict', {
      method: 'POST', body: JSON.stringify({ instances: [instance(1)], entity: { user_id: 'u' } }), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    }, env)
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('2')
    expect(res.headers.get('x-model-version')).toBe('2')
    expect(res.headers.get('x-variant')).toBe('stable')
    expect(res.headers.get('x-input-normalized')).toBe('0')
    // Every stage names its headers on the final response, the refusal included.
    expect(res.headers.get('ratelimit-limit')).toBe('1000')
    expect(res.headers.get('x-trace-id')).toMatch(/^[0-9a-f]{32}$/)
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
