import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'

let app: ReturnType<typeof createApp>
const admin = generateApiKey('test')

beforeAll(async () => {
  app = createApp({ parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['predict', 'admin'], rate_limit_per_minute: 1_000 }]) } })
})

// Services are built, never called: a refused method reaches no tier.
const env = { BACKEND_URL: 'http://backend.invalid' }
const request = (path: string, init?: RequestInit) => app.request(path, init, env)

const problemOf = async (res: Response) => {
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return (await res.json()) as { status: number; detail: string; error?: string }
}

describe('a wrong method on a known path', () => {
  it('is 405 with Allow on an infer route, in the problem shape with the protocol\'s error member', async () => {
    for (const path of ['/v2/models/m/infer', '/v2/models/m/versions/2/infer']) {
      const res = await request(path)
      expect(res.status, path).toBe(405)
      expect(res.headers.get('allow'), path).toBe('POST')
      const body = await problemOf(res)
      expect(body).toMatchObject({ status: 405, error: body.detail })
      expect(body.detail).toContain('POST')
    }
  })

  it('is 405 naming GET, HEAD and PUT on the rollout', async () => {
    const res = await request('/v1/models/m/rollout', { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET, HEAD, PUT')
    expect(await problemOf(res)).toMatchObject({ status: 405 })
  })

  it('is 405 on a read-only route, POST on the model metadata included', async () => {
    for (const path of ['/v2/models/m', '/v2/health/ready', '/openapi.json']) {
      const res = await request(path, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })
      expect(res.status, path).toBe(405)
      expect(res.headers.get('allow'), path).toBe('GET, HEAD')
    }
  })

  it('leaves an unknown path a 404 and a known one answered', async () => {
    expect((await request('/v2/nothing/here')).status).toBe(404)
    expect((await request('/openapi.json')).status).toBe(200)
    expect((await request('/openapi.json', { method: 'HEAD' })).status).toBe(200)
  })
})
