import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'
import { applicant, creditRequest } from '../../backend/support/applicants.ts'

let backend: BackendProcess
let app: ReturnType<typeof createApp>
let env: Record<string, string>
const keys = { predict: '', admin: '' }

const call = (method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}) =>
  app.request(path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...headers },
  }, env)

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  keys.predict = generateApiKey('test')
  keys.admin = generateApiKey('test')
  const store = new MemoryKeyStore([
    { name: 'web', hash: await hashApiKey(keys.predict), scopes: ['predict'], rate_limit_per_minute: 100_000 },
    { name: 'ops', hash: await hashApiKey(keys.admin), scopes: ['predict', 'admin'], rate_limit_per_minute: 100_000 },
  ])
  app = createApp({ parts: { keys: store } })
  env = { BACKEND_URL: backend.url }
})

afterAll(async () => {
  await backend?.stop()
})

describe('rollout API', () => {
  it('shows the default rollout, and needs the admin scope', async () => {
    const res = await call('GET', '/v1/models/credit-risk/rollout', keys.admin)
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).toBe('"r0"')
    expect(await res.json()).toMatchObject({ revision: 0, source: 'default', rollout: { arms: [{ variant: 'stable', version: 2, weight: 100 }] } })
    expect((await call('GET', '/v1/models/credit-risk/rollout', keys.predict)).status).toBe(403)
  })

  it('refuses invalid rollouts with field errors', async () => {
    const bad = await call('PUT', '/v1/models/credit-risk/rollout', keys.admin, { salt: 's', arms: [{ variant: 'a', version: 2, weight: 60 }] }, { 'if-match': '"r0"' })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ errors: [{ path: 'arms', message: 'weights sum to 60, not 100' }] })
    const unserved = await call('PUT', '/v1/models/credit-risk/rollout', keys.admin, { salt: 's', arms: [{ variant: 'a', version: 7, weight: 100 }] }, { 'if-match': '"r0"' })
    expect(await unserved.json()).toMatchObject({ status: 400, errors: [{ path: 'arms[0].version' }] })
  })

  it('applies a weight change at once; users stay in their arm; a stale If-Match gets 412', async () => {
    const put = await call('PUT', '/v1/models/credit-risk/rollout', keys.admin, {
      salt: 'exp-1', arms: [{ variant: 'stable', version: 2, weight: 50 }, { variant: 'canary', version: 1, weight: 50 }],
    }, { 'if-match': '"r0"' })
    expect(put.status).toBe(200)
    expect(put.headers.get('etag')).toBe('"r1"')
    const seen = new Map<string, string>()
    for (let u = 0; u < 40; u++) {
      for (let again = 0; again < 2; again++) {
        const res = await call('POST', '/v1/models/credit-risk/predict', keys.predict, { instances: [instance(u)], entity: { user_id: `user-${u}` } })
        const variant = res.headers.get('x-variant')!
        expect(res.headers.get('x-model-version')).toBe(variant === 'stable' ? '2' : '1')
        if (seen.has(`user-${u}`)) expect(variant).toBe(seen.get(`user-${u}`))
        seen.set(`user-${u}`, variant)
      }
    }
    expect(new Set(seen.values())).toEqual(new Set(['stable', 'canary']))
    const stale = await call('PUT', '/v1/models/credit-risk/rollout', keys.admin, { salt: 'x', arms: [{ variant: 'stable', version: 2, weight: 100 }] }, { 'if-match': '"r0"' })
    expect(stale.status).toBe(412)
  })
})

describe('shadow traffic', () => {
  it('also sends shadowed requests to the shadow version in the background and records agreement, never answering with it', async () => {
    const etag = (await call('GET', '/v1/models/credit-risk/rollout', keys.admin)).headers.get('etag')!
    const put = await call('PUT', '/v1/models/credit-risk/rollout', keys.admin, {
      salt: 'shadow-exp', arms: [{ variant: 'stable', version: 2, weight: 100 }], pinnable: [1], shadow: { version: 1, percent: 100 },
    }, { 'if-match': etag })
    expect(put.status).toBe(200)
    const background: Promise<unknown>[] = []
    const executionCtx = { waitUntil: (p: Promise<unknown>) => void background.push(p), passThroughOnException: () => {}, props: {} }
    const lines: string[] = []
    const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void lines.push(String(line)))
    try {
      const res = await app.request('/v1/models/credit-risk/predict', {
        method: 'POST',
        body: JSON.stringify({ instances: [instance(1), instance(2), instance(3)], entity: { user_id: 'shadowed-user' } }),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.predict}`, 'x-request-id': 'shadow-test-0001' },
      }, env, executionCtx)
      expect(res.status).toBe(200)
      expect(((await res.json()) as { version: string }).version).toBe('2')
      expect(background).toHaveLength(1)
      await Promise.all(background)
    } finally {
      spy.mockRestore()
    }
    const shadow = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'shadow')
    expect(shadow).toMatchObject({ model: 'credit-risk', version: 2, shadow_version: 1, rows: 3, request_id: 'shadow-test-0001' })
    expect(shadow!.agreement).toBeGreaterThanOrEqual(0)
    expect(shadow!.agreement).toBeLessThanOrEqual(1)
    expect(shadow!.max_probability_diff).toBeGreaterThan(0)
  })
})

describe('catalog and tensor pass-through', () => {
  it('lists the models clients may call', async () => {
    const res = await call('GET', '/v1/models', keys.predict)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ models: [{ name: 'credit-risk', href: '/v1/models/credit-risk' }] })
    expect((await app.request('/v1/models', {}, env)).status).toBe(401)
  })

  it('describes a model for clients', async () => {
    const res = await call('GET', '/v1/models/credit-risk', keys.predict)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { versions: string[]; labels: string[]; features: Array<{ name: string }> }
    expect(body.versions).toEqual(['1', '2'])
    expect(body.labels).toEqual(['low_risk', 'high_risk'])
    expect(body.features.map((f) => f.name)).toContain('debt_ratio')
  })

  it('forwards an Open Inference Protocol request to the version in the path', async () => {
    const res = await call('POST', '/v2/models/credit-risk/versions/1/infer', keys.predict, creditRequest(2, 0, { id: 'tensor-1' }))
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ model_name: 'credit-risk', model_version: '1', id: 'tensor-1', outputs: [{ shape: [2, 2] }] })
  })

  it('passes the backend tensor errors on as 400 problems', async () => {
    const res = await call('POST', '/v2/models/credit-risk/infer', keys.predict, { inputs: [{ name: 'features', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ status: 400, detail: expect.stringMatching(/^inference tier: input "features": shape \[1,3\] does not match/) })
  })
})
