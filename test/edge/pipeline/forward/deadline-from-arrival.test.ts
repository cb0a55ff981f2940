import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../../edge/app.ts'
import { generateApiKey, hashApiKey, type KeyEntry } from '../../../../edge/stores/keys/api-key.ts'
import type { KeyStore } from '../../../../edge/stores/keys/key-store.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import { applicant } from '../../../backend/support/applicants.ts'
import { startBackend, type BackendProcess } from '../../../backend/support/backend-process.ts'

const SLOW_KEY_MS = 1_500
let backend: BackendProcess
let proxy: Server
/** X-Request-Deadline-Ms of every infer call the backend was sent. */
const sentDeadlines: number[] = []
let key: string
let app: ReturnType<typeof createApp>
let env: Record<string, string>

/** A key store as slow as a far-away Redis: time the client waited before routing even began. */
class SlowKeyStore implements KeyStore {
  constructor(private readonly inner: KeyStore) {}
  async find(hash: string): Promise<KeyEntry | undefined> {
    await new Promise((r) => setTimeout(r, SLOW_KEY_MS))
    return this.inner.find(hash)
  }
}

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  // Forwards to the real backend and notes the deadline each infer call carried.
  proxy = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (req.url?.endsWith('/infer')) sentDeadlines.push(Number(req.headers['x-request-deadline-ms']))
    const upstream = await fetch(`${backend.url}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: req.method === 'POST' ? Buffer.concat(chunks) : undefined })
    res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await upstream.arrayBuffer()))
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  key = generateApiKey('test')
  const entry: KeyEntry = { name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1000 }
  app = createApp({ parts: { keys: new SlowKeyStore(new MemoryKeyStore([entry])) } })
  env = { BACKEND_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, MAX_INSTANCES: '64' }
})

afterAll(async () => {
  await new Promise((r) => proxy?.close(r))
  await backend?.stop()
})

describe('the deadline a client sets', () => {
  it('counts from when the request arrived: the backend is sent what is left after the slow stages', async () => {
    const { account_age_months: _a, num_products: _n, ...instance } = applicant(1)
    const res = await app.request('/v1/models/credit-risk/predict', {
      method: 'POST',
      body: JSON.stringify({ instances: [instance], entity: { user_id: 'u-1' } }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-deadline-ms': '3000' },
    }, env)
    expect(res.status, await res.clone().text()).toBe(200)
    expect(sentDeadlines).toHaveLength(1)
    expect(sentDeadlines[0]).toBeGreaterThan(0)
    expect(sentDeadlines[0]).toBeLessThanOrEqual(3_000 - SLOW_KEY_MS)
    // Server-Timing's edge share includes the stages before the route.
    expect(Number(/edge;dur=(\d+)/.exec(res.headers.get('server-timing') ?? '')?.[1])).toBeGreaterThanOrEqual(SLOW_KEY_MS)
  })
})
