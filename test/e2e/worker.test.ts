import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey } from '../../edge/stores/keys/api-key.ts'
import { demoApplicant as instance } from '../../dev/demo-applicant.ts'
import { until, type BackendProcess } from '../backend/support/backend-process.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient, type EdgeClient } from '../support/client.ts'
import { startStack, type Stack } from '../support/stack.ts'

let stack: Stack
let backend: BackendProcess
let worker: RunningWorker
let key: string
let edge: EdgeClient
const ORIGIN = 'https://app.example.test'

beforeAll(async () => {
  stack = await startStack({
    backend: { LOG_LEVEL: 'debug' },
    keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 600 }],
    worker: { ALLOWED_ORIGINS: ORIGIN, MAX_INSTANCES: '64' },
  })
  ;({ backend, worker } = stack)
  key = stack.keys.web!
  edge = edgeClient(worker.url, { key })
})

afterAll(async () => {
  await stack?.stop()
})

describe('the bundled worker in workerd, against the real backend', () => {
  it('answers a prediction end to end', async () => {
    const res = await edge.predict([instance(1), instance(2)], { entity: { user_id: 'u-1' }, headers: { origin: ORIGIN } })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    const body = res.body
    expect(body.version).toBe('2')
    expect(body.predictions).toHaveLength(2)
  })

  it('carries the caller\'s trace id to the backend under the edge\'s own span', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const res = await edge.predict([instance(3)], { entity: { user_id: 'u-2' }, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-trace-id')).toBe(traceId)
    const find = () => backend.logs.find((l) => l.msg === 'infer' && String(l.traceparent).includes(traceId))
    await until(() => find() !== undefined)
    const seen = find()
    expect(seen?.traceparent).toMatch(new RegExp(`^00-${traceId}-(?!00f067aa0ba902b7)[0-9a-f]{16}-01$`))
  })

  it('answers CORS preflight for allowed origins only', async () => {
    const preflight = (origin: string) =>
      fetch(`${worker.url}/v1/models/credit-risk/predict`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key' },
      })
    const allowed = await preflight(ORIGIN)
    expect(allowed.status).toBe(204)
    expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN)
    expect(allowed.headers.get('access-control-allow-headers')).toMatch(/x-api-key/)
    const other = await preflight('https://evil.example.test')
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('refuses a wrong key with a 401 problem and never writes a key to its logs', async () => {
    const wrong = generateApiKey('test')
    const requestId = `never-logs-a-key-${Date.now()}`
    const res = await fetch(`${worker.url}/v1/models/credit-risk/predict`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${wrong}`, 'x-request-id': requestId }, body: '{"instances":[]}',
    })
    expect(res.status).toBe(401)
    const text = await res.text()
    expect(text).not.toContain(wrong)
    // workerd's console reaches the test on its own schedule: wait for this request's line, so
    // the check below reads a log that holds it (it passed vacuously on an empty log before).
    await until(() => worker.logs.some((l) => l.includes(requestId)))
    expect(worker.logs.join('\n')).not.toContain(wrong)
    expect(worker.logs.join('\n')).not.toContain(key)
  })

  it('answers problems in the same shape as in Node', async () => {
    const missing = await fetch(`${worker.url}/nope`)
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toBe('application/problem+json')
    expect(await missing.json()).toMatchObject({ status: 404, title: 'Not Found' })
  })
})
