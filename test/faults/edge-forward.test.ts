import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { minuteOf } from '../../shared/drift/report.ts'
import { createApp } from '../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { FallbackTransport } from '../../edge/backend-client/fallback.ts'
import { HttpTransport } from '../../edge/backend-client/http.ts'
import { LambdaTransport } from '../../edge/backend-client/lambda.ts'
import type { Transport } from '../../edge/backend-client/transport.ts'
import { ModelCatalog } from '../../edge/backend-client/catalog.ts'
import { MemoryGroundTruth } from '../../edge/stores/ground-truth/memory.ts'
import { MemoryRolloutStore } from '../../edge/stores/rollouts/memory.ts'
import { applicant, creditRequest } from '../backend/support/applicants.ts'
import { until } from '../backend/support/backend-process.ts'
import { freePort } from '../support/ports.ts'
import { demoMetadata, startStubBackend, type StubBackend } from './support/stub-backend.ts'

const MODEL = 'credit-risk'
let key: string
let describing: StubBackend
/** Nothing listens here: every call to it goes unanswered. */
let nowhere: string

const lambdaAt = (endpoint: string) =>
  new LambdaTransport({ functionName: 'edge-infer-cpu', region: 'eu-west-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, endpoint, maxAttempts: 1 })

beforeAll(async () => {
  key = generateApiKey('test')
  describing = await startStubBackend((_method, path) => (path === `/v2/models/${MODEL}` ? { status: 200, body: demoMetadata(MODEL, [1]) } : { status: 404, body: { error: 'not here' } }))
  nowhere = `http://127.0.0.1:${await freePort()}`
})

afterAll(async () => {
  await describing?.close()
})

/** An edge whose catalog reads the stub, whose inference goes through `transport`, counting into its own store. */
const edgeWith = async (transport: Transport) => {
  const groundTruth = new MemoryGroundTruth()
  const app = createApp({
    parts: {
      keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000 }]),
      transport,
      catalog: new ModelCatalog({ transport: new HttpTransport({ baseUrl: describing.url }) }),
      rollouts: new MemoryRolloutStore(),
      groundTruth,
    },
  })
  const send = (path: string, body: unknown) =>
    app.request(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', 'x-api-key': key } })
  const edgeFailures = async () => (await groundTruth.window(MODEL, 1, minuteOf(Date.now()) - 1, minuteOf(Date.now()))).edgeFailures
  return { send, edgeFailures }
}

const { account_age_months: _a, num_products: _n, ...features } = applicant(1)
const predictBody = { instances: [features], entity: { user_id: 'u-1' } }
const tensorBody = creditRequest(1)

describe('calls the backend never answered are counted against their version on every path', () => {
  it('the tensor route counts a call to an unreachable backend, as predict does', async () => {
    const edge = await edgeWith(new HttpTransport({ baseUrl: nowhere, retries: 0 }))
    expect((await edge.send(`/v2/models/${MODEL}/infer`, tensorBody)).status).toBe(503)
    expect(await edge.edgeFailures()).toBe(1)
    expect((await edge.send(`/v1/models/${MODEL}/predict`, predictBody)).status).toBe(503)
    expect(await edge.edgeFailures()).toBe(2)
  })

  it('with a Lambda fallback that fails too, the backend\'s unanswered call is still counted, on both routes', async () => {
    const edge = await edgeWith(new FallbackTransport(new HttpTransport({ baseUrl: nowhere, retries: 0 }), lambdaAt(nowhere)))
    const tensor = await edge.send(`/v2/models/${MODEL}/infer`, tensorBody)
    expect(tensor.status).toBe(503)
    expect(((await tensor.json()) as { detail: string }).detail).toMatch(/the fallback tier failed too/)
    expect(await edge.edgeFailures()).toBe(1)
    expect((await edge.send(`/v1/models/${MODEL}/predict`, predictBody)).status).toBe(503)
    expect(await edge.edgeFailures()).toBe(2)
  })
})

describe('the request\'s deadline bounds every wait, the model\'s description included', () => {
  let stalled: StubBackend
  let app: ReturnType<typeof createApp>
  let env: Record<string, string>

  beforeAll(async () => {
    // Accepts every request and never answers: the backend of a hung pod.
    stalled = await startStubBackend(() => 'stall')
    env = { BACKEND_URL: stalled.url, API_KEYS: JSON.stringify([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000 }]) }
    app = createApp()
  })

  afterAll(async () => {
    await stalled?.close()
  })

  const send = (path: string, body: unknown, deadlineMs: number) =>
    app.request(path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-request-deadline-ms': String(deadlineMs) } }, env)

  it.each([
    ['predict', `/v1/models/${MODEL}/predict`, predictBody],
    ['the tensor route', `/v2/models/${MODEL}/infer`, tensorBody],
  ])('%s: a cold catalog asks the backend with what remains of a 300 ms deadline, and the request gets 504 when it is spent', async (_route, path, body) => {
    const before = stalled.seen.length
    const started = Date.now()
    const res = await send(path, body, 300)
    expect(res.status).toBe(504)
    expect(((await res.json()) as { detail: string }).detail).toMatch(/within the request's deadline/)
    const asked = stalled.seen.slice(before)
    expect(asked.map((r) => r.path)).toEqual([`/v2/models/${MODEL}`])
    // The metadata call was given the request's budget, not the catalog's own 5 s: the backend was told so, and the edge let go of it.
    expect(asked[0].deadlineMs).toBeLessThanOrEqual(300)
    await until(() => asked[0].abandoned)
    // A sanity bound only, far above both the deadline and the old 5 s wait; the assertions above are the test.
    expect(Date.now() - started).toBeLessThan(30_000)
  })
})
