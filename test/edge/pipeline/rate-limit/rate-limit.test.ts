import { Hono } from 'hono'
import { beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { auth } from '../../../../edge/pipeline/auth/index.ts'
import { rateLimit } from '../../../../edge/pipeline/rate-limit/index.ts'
import { notFound, onError } from '../../../../edge/on-error.ts'
import { Problem } from '../../../../edge/problem.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { SlidingWindowLimiter } from '../../../../edge/stores/limits/memory.ts'

const MINUTE = 60_000
const T0 = 28_000_000 * MINUTE
const slowKey = generateApiKey('test')
const fastKey = generateApiKey('test')
let store: MemoryKeyStore

beforeAll(async () => {
  store = new MemoryKeyStore([
    { name: 'slow', hash: await hashApiKey(slowKey), scopes: ['predict'], rate_limit_per_minute: 3 },
    { name: 'fast', hash: await hashApiKey(fastKey), scopes: ['predict'], rate_limit_per_minute: 5 },
  ])
})

const setup = ({ windowMs }: { windowMs?: number } = {}) => {
  const time = { now: T0 }
  const app = new Hono<AppEnv>()
  app.use('/v1/*', givenIsolate({ keys: store, limiter: new SlidingWindowLimiter({ now: () => time.now }) }), auth(), rateLimit({ windowMs }))
  app.get('/v1/ping', (c) => c.json({ ok: true }))
  app.get('/v1/invalid', () => {
    throw new Problem(400, 'Bad Request', 'refused downstream')
  })
  app.notFound(notFound)
  app.onError(onError)
  const get = (key: string, path = '/v1/ping') => app.request(path, { headers: { authorization: `Bearer ${key}` } })
  return { app, time, get }
}

const rateHeaders = (res: Response) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
  reset: res.headers.get('ratelimit-reset'),
})

describe('rateLimit middleware', () => {
  it('allows exactly the key\'s limit per minute with RateLimit-* headers, then 429', async () => {
    const { get } = setup()
    for (const remaining of ['2', '1', '0']) {
      const res = await get(slowKey)
      expect(res.status).toBe(200)
      expect(rateHeaders(res)).toEqual({ limit: '3', remaining, reset: '60' })
    }
    const refused = await get(slowKey)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('content-type')).toBe('application/problem+json')
    // Three requests at 0 s: the first leaves the window, making room, at 60 s.
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(rateHeaders(refused)).toEqual({ limit: '3', remaining: '0', reset: '60' })
    expect(await refused.json()).toMatchObject({
      type: 'https://edge-infer.dev/problems/too-many-requests', title: 'Too Many Requests', status: 429,
      detail: 'the API key "slow" may make 3 requests per 60 s; retry in 60 s',
    })
  })

  it('lets the caller back in when the window has slid far enough', async () => {
    const { get, time } = setup()
    for (let i = 0; i < 3; i++) expect((await get(slowKey)).status).toBe(200)
    time.now = T0 + 30_000
    const early = await get(slowKey)
    expect(early.status).toBe(429)
    expect(early.headers.get('retry-after')).toBe('30')
    time.now = T0 + 60_000 - 1
    expect((await get(slowKey)).status).toBe(429)
    time.now = T0 + 60_000
    expect((await get(slowKey)).status).toBe(200)
  })

  it('rounds Retry-After up and never below one second', async () => {
    const { get, time } = setup()
    for (let i = 0; i < 3; i++) await get(slowKey)
    time.now = T0 + 59_999
    const res = await get(slowKey)
    expect(res.status).toBe(429)
    expect(res.headers.get('retry-after')).toBe('1')
    time.now = T0 + 59_001
    expect((await get(slowKey)).headers.get('retry-after')).toBe('1')
    time.now = T0 + 58_999
    expect((await get(slowKey)).headers.get('retry-after')).toBe('2')
  })

  it('keeps callers independent, each at its own limit', async () => {
    const { get } = setup()
    for (let i = 0; i < 3; i++) expect((await get(slowKey)).status).toBe(200)
    expect((await get(slowKey)).status).toBe(429)
    for (let i = 0; i < 5; i++) {
      const res = await get(fastKey)
      expect(res.status).toBe(200)
      expect(res.headers.get('ratelimit-limit')).toBe('5')
    }
    expect((await get(fastKey)).status).toBe(429)
  })

  it('does not count refused requests or unauthenticated ones', async () => {
    const { app, get } = setup()
    for (let i = 0; i < 5; i++) expect((await app.request('/v1/ping')).status).toBe(401)
    for (let i = 0; i < 3; i++) expect((await get(slowKey)).status).toBe(200)
    for (let i = 0; i < 5; i++) expect((await get(slowKey)).status).toBe(429)
  })

  it('puts RateLimit-* headers on problem responses from later stages too', async () => {
    const { get } = setup()
    const invalid = await get(slowKey, '/v1/invalid')
    expect(invalid.status).toBe(400)
    expect(rateHeaders(invalid)).toEqual({ limit: '3', remaining: '2', reset: '60' })
    const missing = await get(slowKey, '/v1/nowhere')
    expect(missing.status).toBe(404)
    expect(rateHeaders(missing)).toEqual({ limit: '3', remaining: '1', reset: '60' })
  })

  it('scales the per-minute limit to a shorter window', async () => {
    const { get, time } = setup({ windowMs: 20_000 })
    // 5 per minute over 20 s windows: round(5/3) = 2.
    expect((await get(fastKey)).headers.get('ratelimit-limit')).toBe('2')
    expect((await get(fastKey)).status).toBe(200)
    expect((await get(fastKey)).status).toBe(429)
    time.now = T0 + 40_000
    expect((await get(fastKey)).status).toBe(200)
  })

  it('fails as an internal error when auth did not run first', async () => {
    const app = new Hono<AppEnv>()
    app.use('*', givenIsolate(), rateLimit())
    app.get('/', (c) => c.text('unreachable'))
    app.onError(onError)
    const errors: unknown[] = []
    const original = console.error
    console.error = (...args: unknown[]) => void errors.push(args)
    try {
      const res = await app.request('/')
      expect(res.status).toBe(500)
    } finally {
      console.error = original
    }
    expect(errors).toHaveLength(1)
  })
})
