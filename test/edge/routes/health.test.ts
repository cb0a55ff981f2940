import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { circuitBreakers } from '../../../edge/backend-client/circuit-breaker.ts'
import { HttpTransport } from '../../../edge/backend-client/http.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { startStubBackend, type StubBackend } from '../../faults/support/stub-backend.ts'
import { freePort } from '../../support/ports.ts'

let key: string
let port: number
let backend: StubBackend | undefined

beforeAll(async () => {
  key = generateApiKey('test')
  port = await freePort()
})

afterAll(async () => {
  await backend?.close()
})

describe('GET /v2/health/{live,ready} on the edge', () => {
  it('answers from the edge\'s own calls to the backend, never calling it and never naming a backend instance', async () => {
    let clock = Date.now()
    // Nothing listens on the port yet: the backend is down.
    const now = () => clock
    const http = new HttpTransport({ baseUrl: `http://127.0.0.1:${port}`, retries: 0, breakers: circuitBreakers({ now }), readBreakers: circuitBreakers({ now }), now })
    const app = createApp({
      parts: { keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000 }]), transport: http, reader: http, catalog: new ModelCatalog({ transport: http }) },
    })
    const health = async (path: string) => {
      const res = await app.request(path)
      return [res.status, await res.json()]
    }
    const listModels = async () => (await app.request('/v1/models', { headers: { 'x-api-key': key } })).status

    // Nothing known against the backend yet: live and ready, from the edge alone.
    expect(await health('/v2/health/live')).toEqual([200, { live: true }])
    expect(await health('/v2/health/ready')).toEqual([200, { ready: true }])

    // Five calls in a row go unanswered: not ready (still live), until the cooldown (5 s) lets the next call tell.
    for (let i = 0; i < 5; i++) expect(await listModels()).toBe(503)
    expect(await health('/v2/health/ready')).toEqual([503, { ready: false }])
    expect(await health('/v2/health/live')).toEqual([200, { live: true }])
    clock += 5_000
    expect(await health('/v2/health/ready')).toEqual([200, { ready: true }])

    // Unanswered again, then the backend is back: the first answer makes the edge ready.
    for (let i = 0; i < 5; i++) expect(await listModels()).toBe(503)
    expect(await health('/v2/health/ready')).toEqual([503, { ready: false }])
    backend = await startStubBackendOn(port)
    clock += 5_000
    expect(await listModels()).toBe(200)
    expect(await health('/v2/health/ready')).toEqual([200, { ready: true }])
    // Only the model list reached the backend: health costs it nothing.
    expect(backend.seen.map((r) => r.path)).toEqual(['/v2/models'])
  })
})

/** A backend that lists no models, on `port`. */
const startStubBackendOn = (port: number): Promise<StubBackend> => startStubBackend(() => ({ status: 200, body: { models: [] } }), port)
