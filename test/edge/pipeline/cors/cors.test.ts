import { type Env, Hono, type MiddlewareHandler } from 'hono'
import { cors as honoCors } from 'hono/cors'
import { describe, expect, it } from 'vitest'
import type { AppEnv } from '../../../../edge/app.ts'
import { cors } from '../../../../edge/pipeline/cors/index.ts'
import { requestId } from '../../../../edge/pipeline/request-id/index.ts'
import { onError } from '../../../../edge/on-error.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { Problem } from '../../../../edge/problem.ts'

const ALLOWED = 'https://app.example.test'
const options = {
  allowHeaders: ['authorization', 'content-type'],
  exposeHeaders: ['x-request-id', 'retry-after'],
  maxAge: 600,
}

const appWith = <E extends Env>(middleware: MiddlewareHandler<E>) => {
  const app = new Hono<AppEnv>()
  app.use('*', givenIsolate({}, { ALLOWED_ORIGINS: ALLOWED }), requestId(), middleware)
  app.post('/ok', (c) => c.json({ ok: true }))
  app.post('/refused', () => {
    throw new Problem(429, 'Too Many Requests', 'slow down')
  })
  app.onError(onError)
  return app
}
const ours = appWith(cors(options))
// hono/cors with the same allow-list, given as its origin function.
const hono = appWith(honoCors({ ...options, origin: (origin: string) => (origin === ALLOWED ? origin : null) }))

const headersOf = (res: Response) => Object.fromEntries([...res.headers].filter(([name]) => name !== 'x-request-id'))
const send = (app: Hono<AppEnv>, method: string, path: string, origin: string) =>
  app.request(path, { method, headers: { origin, 'access-control-request-method': 'POST', 'x-request-id': 'req-00000001' } })

describe('cors middleware', () => {
  it.each([
    ['an allowed origin', 'POST', '/ok', ALLOWED],
    ['another origin', 'POST', '/ok', 'https://evil.example.test'],
    ['a preflight from an allowed origin', 'OPTIONS', '/ok', ALLOWED],
    ['a preflight from another origin', 'OPTIONS', '/ok', 'https://evil.example.test'],
  ])('answers %s with the headers hono/cors sends', async (_, method, path, origin) => {
    const [mine, theirs] = await Promise.all([send(ours, method, path, origin), send(hono, method, path, origin)])
    expect(mine.status).toBe(theirs.status)
    expect(headersOf(mine)).toEqual(headersOf(theirs))
  })

  it('answers preflights with 204 and the allowed request headers', async () => {
    const res = await send(ours, 'OPTIONS', '/ok', ALLOWED)
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED)
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization,content-type')
    expect(res.headers.get('access-control-max-age')).toBe('600')
    expect(res.headers.get('x-request-id')).toBe('req-00000001')
  })

  it('keeps its headers on problem responses, so a browser can read the refusal', async () => {
    const res = await send(ours, 'POST', '/refused', ALLOWED)
    expect(res.status).toBe(429)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(res.headers.get('access-control-allow-origin')).toBe(ALLOWED)
    expect(res.headers.get('access-control-expose-headers')).toBe('x-request-id,retry-after')
    expect(res.headers.get('vary')).toBe('Origin')
  })
})
