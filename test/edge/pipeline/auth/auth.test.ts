import { Hono } from 'hono'
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { auth } from '../../../../edge/pipeline/auth/index.ts'
import { requestId } from '../../../../edge/pipeline/request-id/index.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { notFound, onError } from '../../../../edge/on-error.ts'

const predictKey = generateApiKey('test')
const adminKey = generateApiKey('test')
const adminOnlyKey = generateApiKey('test')
const unknownKey = generateApiKey('test')
let app: Hono<AppEnv>
/** Every message of every error that reached onError. */
const thrown: string[] = []

beforeAll(async () => {
  const store = new MemoryKeyStore([
    { name: 'web', hash: await hashApiKey(predictKey), scopes: ['predict'], rate_limit_per_minute: 600 },
    { name: 'ops', hash: await hashApiKey(adminKey), scopes: ['predict', 'admin'], rate_limit_per_minute: 60 },
    { name: 'root', hash: await hashApiKey(adminOnlyKey), scopes: ['admin'], rate_limit_per_minute: 60 },
  ])
  app = new Hono<AppEnv>()
  app.use('*', givenIsolate({ keys: store }), requestId())
  app.use('/v1/*', auth())
  app.use('/admin/*', auth({ scope: 'admin' }))
  app.get('/v1/whoami', (c) => c.json(c.get('caller')))
  app.get('/admin/whoami', (c) => c.json(c.get('caller')))
  app.notFound(notFound)
  app.onError((err, c) => {
    thrown.push(err.message, err.stack ?? '')
    return onError(err, c)
  })
})

/** Whether any 8 consecutive characters of the key's random part appear in `text`. */
const leaks = (text: string, key: string) => {
  const random = key.replace(/^ei_[a-z0-9]+_/, '')
  for (let i = 0; i + 8 <= random.length; i++) if (text.includes(random.slice(i, i + 8))) return true
  return false
}

const get = (path: string, headers: Record<string, string> = {}) => app.request(path, { headers: { 'x-request-id': 'trace-00000001', ...headers } })

const expectUnauthorized = async (res: Response, detail: RegExp, error?: string) => {
  expect(res.status).toBe(401)
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  expect(res.headers.get('www-authenticate')).toBe(error ? `Bearer realm="edge-infer", error="${error}"` : 'Bearer realm="edge-infer"')
  const body = (await res.json()) as { detail: string }
  expect(body).toMatchObject({ type: 'https://edge-infer.dev/problems/unauthorized', title: 'Unauthorized', status: 401, request_id: 'trace-00000001' })
  expect(body.detail).toMatch(detail)
}

describe('auth middleware', () => {
  it('accepts a Bearer token and sets the caller', async () => {
    const res = await get('/v1/whoami', { authorization: `Bearer ${predictKey}` })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ name: 'web', tenant: 'web', scopes: ['predict'], rateLimitPerMinute: 600 })
  })

  it('accepts X-Api-Key, a lowercase scheme and both headers when they agree', async () => {
    for (const headers of [
      { 'x-api-key': predictKey } as Record<string, string>,
      { authorization: `bearer ${predictKey}` },
      { authorization: `Bearer ${predictKey}`, 'x-api-key': predictKey },
    ]) {
      const res = await get('/v1/whoami', headers)
      expect(res.status, JSON.stringify(Object.keys(headers))).toBe(200)
      expect(await res.json()).toMatchObject({ name: 'web' })
    }
  })

  it('refuses a missing key with 401 and a plain challenge', async () => {
    await expectUnauthorized(await get('/v1/whoami'), /API key is required/)
    await expectUnauthorized(await get('/v1/whoami', { 'x-api-key': '' }), /API key is required/)
  })

  it('refuses malformed headers and keys with 401', async () => {
    await expectUnauthorized(await get('/v1/whoami', { authorization: predictKey }), /must be "Bearer <key>"/, 'invalid_request')
    await expectUnauthorized(await get('/v1/whoami', { authorization: `Basic ${btoa(`u:${predictKey}`)}` }), /must be "Bearer <key>"/, 'invalid_request')
    await expectUnauthorized(await get('/v1/whoami', { authorization: 'Bearer' }), /must be "Bearer <key>"/, 'invalid_request')
    await expectUnauthorized(await get('/v1/whoami', { authorization: `Bearer ${predictKey} extra` }), /must be "Bearer <key>"/, 'invalid_request')
    await expectUnauthorized(await get('/v1/whoami', { 'x-api-key': `${predictKey}x` }), /malformed/, 'invalid_token')
    await expectUnauthorized(await get('/v1/whoami', { 'x-api-key': 'sk_live_123' }), /malformed/, 'invalid_token')
  })

  it('refuses two different keys', async () => {
    await expectUnauthorized(await get('/v1/whoami', { authorization: `Bearer ${predictKey}`, 'x-api-key': adminKey }), /different keys/, 'invalid_request')
  })

  it('refuses an unknown key with 401', async () => {
    await expectUnauthorized(await get('/v1/whoami', { authorization: `Bearer ${unknownKey}` }), /not recognized/, 'invalid_token')
    await expectUnauthorized(await get('/v1/whoami', { 'x-api-key': unknownKey }), /not recognized/, 'invalid_token')
  })

  it('refuses a key without the scope with 403', async () => {
    const res = await get('/admin/whoami', { authorization: `Bearer ${predictKey}` })
    expect(res.status).toBe(403)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="edge-infer", error="insufficient_scope", scope="admin"')
    expect(await res.json()).toMatchObject({ type: 'https://edge-infer.dev/problems/forbidden', title: 'Forbidden', status: 403, detail: 'the API key "web" lacks the "admin" scope' })
    const admin = await get('/admin/whoami', { 'x-api-key': adminKey })
    expect(admin.status).toBe(200)
    expect(await admin.json()).toEqual({ name: 'ops', tenant: 'ops', scopes: ['predict', 'admin'], rateLimitPerMinute: 60 })
  })

  it('gives a scope only to keys that list it: an admin key without "predict" is refused on predict routes', async () => {
    const predict = await get('/v1/whoami', { 'x-api-key': adminOnlyKey })
    expect(predict.status).toBe(403)
    expect(await predict.json()).toMatchObject({ detail: 'the API key "root" lacks the "predict" scope' })
    expect((await get('/admin/whoami', { 'x-api-key': adminOnlyKey })).status).toBe(200)
  })

  it('remembers the digests of the last 1,024 keys presented, and of no more', async () => {
    const keys = Array.from({ length: 1_025 }, () => generateApiKey('test'))
    for (const key of keys) expect((await get('/v1/whoami', { 'x-api-key': key })).status).toBe(401)
    const digest = vi.spyOn(crypto.subtle, 'digest')
    try {
      await get('/v1/whoami', { 'x-api-key': keys[1] })
      await get('/v1/whoami', { 'x-api-key': keys[1_024] })
      expect(digest).not.toHaveBeenCalled()
      // The first was dropped when the 1,025th came.
      await get('/v1/whoami', { 'x-api-key': keys[0] })
      expect(digest).toHaveBeenCalledTimes(1)
    } finally {
      digest.mockRestore()
    }
  })

  describe('never leaks a key', () => {
    const output: string[] = []
    beforeEach(() => {
      output.length = 0
      thrown.length = 0
      for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
        vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void output.push(args.map(String).join(' ')))
      }
    })
    afterEach(() => {
      vi.restoreAllMocks()
    })

    it('keeps keys out of responses, logs and error messages', async () => {
      const attempts: Array<[string, Record<string, string>, string]> = [
        ['/v1/whoami', { authorization: `Bearer ${predictKey}` }, predictKey],
        ['/v1/whoami', { authorization: predictKey }, predictKey],
        ['/v1/whoami', { authorization: `Bearer ${predictKey} ${predictKey}` }, predictKey],
        ['/v1/whoami', { 'x-api-key': `${predictKey}!` }, predictKey],
        ['/v1/whoami', { 'x-api-key': unknownKey }, unknownKey],
        ['/v1/whoami', { authorization: `Bearer ${adminKey}`, 'x-api-key': predictKey }, predictKey],
        ['/admin/whoami', { 'x-api-key': predictKey }, predictKey],
        ['/admin/whoami', { 'x-api-key': adminKey }, adminKey],
        ['/v1/nowhere', { 'x-api-key': adminKey }, adminKey],
      ]
      for (const [path, headers, key] of attempts) {
        const res = await get(path, headers)
        const seen = [await res.text(), ...[...res.headers].map(([name, value]) => `${name}: ${value}`)].join('\n')
        for (const secret of [key, predictKey, adminKey, unknownKey]) expect(leaks(seen, secret), `${path} ${res.status}: ${seen}`).toBe(false)
      }
      expect(thrown.length).toBeGreaterThan(0)
      const logsAndErrors = [...output, ...thrown].join('\n')
      for (const secret of [predictKey, adminKey, unknownKey]) expect(leaks(logsAndErrors, secret), logsAndErrors).toBe(false)
    })
  })
})
