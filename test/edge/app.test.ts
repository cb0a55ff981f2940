import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'

const app = createApp()
const key = generateApiKey('test')
/** Bindings holding `key` as a predict key (no backend: a request that gets past the body checks is 503). */
let keyed: { API_KEYS: string }

beforeAll(async () => {
  keyed = { API_KEYS: JSON.stringify([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 600 }]) }
})

/** A body that counts the bytes pulled from it, in chunks of 64 KiB, and only when read. */
const countedBody = (chunks: number) => {
  let pulled = 0
  let sent = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent === chunks) return controller.close()
      sent++
      pulled += 65_536
      controller.enqueue(new Uint8Array(65_536).fill(0x20))
    },
  }, { highWaterMark: 0 })
  return { body, pulled: () => pulled }
}

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
    const headers = { 'x-api-key': key }
    const text = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: 'x', headers: { ...headers, 'content-type': 'text/plain' } }, keyed)
    expect(text.status).toBe(415)
    expect(await text.json()).toMatchObject({ status: 415, title: 'Unsupported Media Type' })
    const big = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(2000) }), headers: { ...headers, 'content-type': 'application/json' } }, { ...keyed, MAX_BODY_BYTES: '1024' })
    expect(big.status).toBe(413)
    const gzip = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: '{}', headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'gzip' } }, keyed)
    expect(gzip.status).toBe(415)
  })

  it('routes before it looks at a body: a method the path lacks is 405 with Allow, a path it lacks is 404, whatever the body', async () => {
    const plain = { method: 'POST', body: 'not json', headers: { 'content-type': 'text/plain' } }
    const models = await app.request('/v1/models', plain)
    expect(models.status).toBe(405)
    expect(models.headers.get('allow')).toBe('GET, HEAD')
    const nowhere = await app.request('/no-such-route', plain)
    expect(nowhere.status).toBe(404)
    expect(await nowhere.json()).toMatchObject({ detail: 'no route for POST /no-such-route' })
    const put = await app.request('/v1/models/credit-risk/predict', { ...plain, method: 'PUT' })
    expect(put.status).toBe(405)
    expect(put.headers.get('allow')).toBe('POST')
  })

  it('checks the key before the body: no key is 401 whatever the body, and the key is looked up before a byte of it is read', async () => {
    const unkeyed = await app.request('/v1/models/credit-risk/predict', { method: 'POST', body: 'x'.repeat(300_000), headers: { 'content-type': 'text/plain' } })
    expect(unkeyed.status).toBe(401)
    const { body, pulled } = countedBody(3)
    let pulledAtLookup: number | undefined
    const keys = new MemoryKeyStore([])
    const spying = createApp({ parts: { keys: { find: (hash) => ((pulledAtLookup = pulled()), keys.find(hash)) } } })
    const res = await spying.request('/v1/models/credit-risk/predict', {
      method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/json', 'x-api-key': generateApiKey('test') },
    } as RequestInit)
    expect(res.status).toBe(401)
    expect(pulledAtLookup).toBe(0)
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
      app.request('/v1/models/credit-risk/predict', { method: 'POST', body: JSON.stringify({ pad: 'x'.repeat(bytes - 10) }), headers: { 'content-type': 'application/json', 'x-api-key': key } }, MAX_BODY_BYTES === undefined ? keyed : { ...keyed, MAX_BODY_BYTES })
    // Past the limit: 413; within it, the body is read and the request goes on to the model (503 here: no backend).
    expect((await post(200, '100')).status).toBe(413)
    expect((await post(200, '300')).status).toBe(503)
    expect((await post(2000, '4096')).status).toBe(503)
    // The default, 256 KiB, where the binding is unset or not a positive whole number.
    expect((await post(200_000)).status).toBe(503)
    expect((await post(300_000)).status).toBe(413)
    for (const invalid of ['', '0', '-5', '1.5', 'lots']) expect((await post(300_000, invalid)).status).toBe(413)
  })
})
