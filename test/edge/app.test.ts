import { describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'

const app = createApp({ maxBodyBytes: 1024 })

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
    const big = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(2000) }), headers: { 'content-type': 'application/json' } })
    expect(big.status).toBe(413)
    const gzip = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
    expect(gzip.status).toBe(415)
  })

  it('sets secure headers', async () => {
    const res = await app.request('/healthz')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
