import { describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'

const app = createApp()

describe('edge app skeleton', () => {
  it('gives every response a request id, keeping a safe incoming one', async () => {
    const own = await app.request('/healthz')
    expect(own.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const kept = await app.request('/healthz', { headers: { 'x-request-id': 'client-trace-123' } })
    expect(kept.headers.get('x-request-id')).toBe('client-trace-123')
    const replaced = await app.request('/healthz', { headers: { 'x-request-id': 'bad id with spaces' } })
    expect(replaced.headers.get('x-request-id')).not.toBe('bad id with spaces')
  })

  it('answers unknown routes with a 404 problem', async () => {
    const res = await app.request('/nope', { headers: { 'x-request-id': 'trace-00000001' } })
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await res.json()).toEqual({
      type: 'https://edge-infer.dev/problems/not-found', title: 'Not Found', status: 404,
      detail: 'no route for GET /nope', instance: '/nope', request_id: 'trace-00000001',
    })
  })

  it('refuses non-JSON bodies with 415 and oversized ones with 413', async () => {
    const text = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } })
    expect(text.status).toBe(415)
    expect(await text.json()).toMatchObject({ status: 415, title: 'Unsupported Media Type' })
    const big = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(2000) }), headers: { 'content-type': 'application/json' } }, { MAX_BODY_BYTES: '1024' })
    expect(big.status).toBe(413)
    const gzip = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
    expect(gzip.status).toBe(415)
  })

  it('sets the secure headers of a JSON API, on refusals too, and none of the document-only ones', async () => {
    for (const res of [await app.request('/healthz'), await app.request('/nope')]) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('strict-transport-security')).toBe('max-age=15552000; includeSubDomains')
      expect(res.headers.get('referrer-policy')).toBe('no-referrer')
      expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin')
      for (const documentOnly of ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection']) {
        expect(res.headers.has(documentOnly)).toBe(false)
      }
    }
  })

  it('follows ALLOWED_ORIGINS as it arrives with each request', async () => {
    const from = async (origin: string, ALLOWED_ORIGINS: string) =>
      (await app.request('/healthz', { headers: { origin } }, { ALLOWED_ORIGINS })).headers.get('access-control-allow-origin')
    expect(await from('https://a.example.test', 'https://a.example.test, https://b.example.test')).toBe('https://a.example.test')
    expect(await from('https://b.example.test', 'https://a.example.test, https://b.example.test')).toBe('https://b.example.test')
    expect(await from('https://a.example.test', 'https://b.example.test')).toBeNull()
    expect(await from('https://a.example.test', '')).toBeNull()
  })

  it('lets an operator page on an allowed origin PUT a rollout: If-Match allowed, ETag exposed, only the methods the API has', async () => {
    const ORIGIN = 'https://ops.example.test'
    const preflight = await app.request('/v1/models/credit-risk/rollout', {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'if-match,content-type,x-api-key' },
    }, { ALLOWED_ORIGINS: ORIGIN })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    expect(preflight.headers.get('access-control-allow-headers')!.split(',')).toEqual(expect.arrayContaining(['if-match', 'content-type', 'x-api-key']))
    expect(preflight.headers.get('access-control-allow-methods')!.split(',').sort()).toEqual(['GET', 'HEAD', 'POST', 'PUT'])
    const answer = await app.request('/healthz', { headers: { origin: ORIGIN } }, { ALLOWED_ORIGINS: ORIGIN })
    expect(answer.headers.get('access-control-expose-headers')!.split(',')).toContain('etag')
  })

  it('takes the body limit from MAX_BODY_BYTES when it is a positive whole number, else 256 KiB', async () => {
    const post = (bytes: number, MAX_BODY_BYTES?: string) =>
      app.request('/v1/models/credit-risk/predict', { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(bytes - 10) }), headers: { 'content-type': 'application/json' } }, MAX_BODY_BYTES === undefined ? {} : { MAX_BODY_BYTES })
    // Past the limit: 413; within it, the body is read and the request goes on to auth (401 here).
    expect((await post(200, '100')).status).toBe(413)
    expect((await post(200, '300')).status).toBe(401)
    expect((await post(2000, '4096')).status).toBe(401)
    // The default, 256 KiB, where the binding is unset or not a positive whole number.
    expect((await post(200_000)).status).toBe(401)
    expect((await post(300_000)).status).toBe(413)
    for (const invalid of ['', '0', '-5', '1.5', 'lots']) expect((await post(300_000, invalid)).status).toBe(413)
  })
})
