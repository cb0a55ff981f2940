import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import type { BackendProcess } from '../backend/support/backend-process.ts'
import { startWorker, type RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient } from '../support/client.ts'
import { startStack, type Stack } from '../support/stack.ts'

// The edge authenticates to the backend with INFER_TOKEN: both tiers real, the worker in workerd.
const token = randomBytes(24).toString('base64url')
let stack: Stack
let backend: BackendProcess
let withToken: RunningWorker
let withoutToken: RunningWorker
let key: string

const predict = (worker: RunningWorker) => edgeClient(worker.url, { key }).predict([demoApplicant(1)], { entity: { user_id: 'u-1' } })

beforeAll(async () => {
  stack = await startStack({
    backend: { LOG_LEVEL: 'debug', INFER_TOKEN: token },
    keys: [{ name: 'web', scopes: ['predict', 'admin'], rate_limit_per_minute: 600 }],
    // Every request's line, not a sample of the successes: the lines are what this suite reads.
    worker: { INFER_TOKEN: token, REQUEST_LOG_SAMPLE_RATE: '1' },
  })
  ;({ backend, worker: withToken } = stack)
  key = stack.keys.web!
  withoutToken = await startWorker({ BACKEND_URL: backend.url, API_KEYS: stack.apiKeys })
})

afterAll(async () => {
  await withoutToken?.dispose()
  await stack?.stop()
})

describe('the edge → backend path with INFER_TOKEN', () => {
  it('the backend refuses infer and metadata without the token, with a protocol error, and leaves probes and /metrics open', async () => {
    const infer = { inputs: [{ name: 'features', shape: [1, 23], datatype: 'FP32', data: new Array(23).fill(0) }] }
    for (const headers of [{}, { authorization: 'Bearer wrong-token-of-some-length' }, { authorization: token }]) {
      const res = await fetch(`${backend.url}/v2/models/credit-risk/versions/2/infer`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(infer) })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /)
      expect(await res.json()).toEqual({ error: expect.stringContaining('INFER_TOKEN') })
    }
    for (const path of ['/v2', '/v2/models', '/v2/models/credit-risk', '/v2/models/credit-risk/versions/2/ready']) {
      expect((await fetch(`${backend.url}${path}`)).status, path).toBe(401)
      expect((await fetch(`${backend.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).status, path).toBe(200)
    }
    for (const path of ['/v2/health/live', '/v2/health/ready', '/metrics']) expect((await fetch(`${backend.url}${path}`)).status, path).toBe(200)
    // The repository API keeps its own guard: disabled without ADMIN_TOKEN, whatever the infer token.
    expect((await fetch(`${backend.url}/v2/repository/index`, { method: 'POST', headers: { authorization: `Bearer ${token}` } })).status).toBe(403)
  })

  it('an edge holding the token predicts, reads OIP metadata and the catalog; one without it is refused as a bad gateway, not a retryable 503', async () => {
    const ok = await predict(withToken)
    expect(ok.status).toBe(200)
    expect((await fetch(`${withToken.url}/v2/models/credit-risk`, { headers: { 'x-api-key': key } })).status).toBe(200)
    expect((await fetch(`${withToken.url}/v1/models/credit-risk`, { headers: { 'x-api-key': key } })).status).toBe(200)
    const refused = await predict(withoutToken)
    expect(refused.status).toBe(502)
    expect(refused.headers.get('retry-after')).toBeNull()
  })

  it('never writes the token to a log line of either tier', async () => {
    await predict(withToken)
    expect(backend.logs.length).toBeGreaterThan(0)
    expect(withToken.logs.length).toBeGreaterThan(0)
    expect(JSON.stringify(backend.logs)).not.toContain(token)
    expect(withToken.logs.join('\n')).not.toContain(token)
  })
})
