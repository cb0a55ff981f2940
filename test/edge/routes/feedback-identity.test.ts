import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { type GroundTruthStore } from '../../../edge/stores/ground-truth/ground-truth-store.ts'
import { MemoryGroundTruth } from '../../../edge/stores/ground-truth/memory.ts'
import { UpstashGroundTruth } from '../../../edge/stores/ground-truth/upstash.ts'
import { minuteOf } from '../../../shared/drift/report.ts'
import { createUpstashClient } from '../../../shared/upstash-client.ts'
import { startBackend, until, type BackendProcess } from '../../backend/support/backend-process.ts'
import { applicant } from '../../backend/support/applicants.ts'
import { startUpstashRedis, type UpstashRedis } from '../../dev/support/upstash-redis.ts'

/**
 * Whose prediction a label is for: two clients that send the same X-Request-Id each label their
 * own, through the real backend, the same with the served records in memory and in Redis.
 */

const TOKEN = 'feedback-identity-test-token-012'
const keys = { a: generateApiKey('test'), aLabels: generateApiKey('test'), b: generateApiKey('test'), ops: generateApiKey('test') }
const env = { BACKEND_URL: '', FEEDBACK_MODELS: 'credit-risk' }
const MODEL = 'credit-risk'

let backend: BackendProcess
let upstash: UpstashRedis

beforeAll(async () => {
  ;[backend, upstash] = await Promise.all([startBackend({ MODEL_REPOSITORY: 'models' }), startUpstashRedis({ token: TOKEN })])
  env.BACKEND_URL = backend.url
}, 60_000)

afterAll(async () => {
  await backend?.stop()
  await upstash?.stop()
})

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

const stores: Array<[string, () => GroundTruthStore]> = [
  ['in memory', () => new MemoryGroundTruth()],
  ['in Redis', () => new UpstashGroundTruth(createUpstashClient({ url: upstash.adapter.url, token: TOKEN }), { timeoutMs: 2_000 })],
]

describe.each(stores)('served records %s', (_, make) => {
  let app: ReturnType<typeof createApp>
  let store: GroundTruthStore

  beforeAll(async () => {
    store = make()
    app = createApp({
      parts: {
        groundTruth: store,
        keys: new MemoryKeyStore([
          // Client A: a predict key, and a labelling key of the same tenant (the predict key's name).
          { name: 'shop-a', hash: await hashApiKey(keys.a), scopes: ['predict'], rate_limit_per_minute: 10_000 },
          { name: 'shop-a-labels', tenant: 'shop-a', hash: await hashApiKey(keys.aLabels), scopes: ['feedback'], rate_limit_per_minute: 10_000 },
          // Client B: another tenant, one key for both.
          { name: 'shop-b', hash: await hashApiKey(keys.b), scopes: ['predict', 'feedback'], rate_limit_per_minute: 10_000 },
          { name: 'ops', hash: await hashApiKey(keys.ops), scopes: ['feedback', 'admin'], rate_limit_per_minute: 10_000 },
        ]),
      },
    })
  })

  /** Predicts under `requestId`, pinned to `version`, and waits until its record (written after the answer) is there. */
  const predict = async (key: string, tenant: string, requestId: string, version: number): Promise<void> => {
    const res = await app.request(`/v1/models/${MODEL}/predict`, {
      method: 'POST',
      body: JSON.stringify({ instances: [instance(1)], entity: { user_id: 'u-1' } }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-request-id': requestId, 'x-model-version': String(version) },
    }, env)
    expect(res.status).toBe(200)
    expect(((await res.json()) as { version: string }).version).toBe(String(version))
    await until(async () => (await store.records([{ tenant, requestId }]))[0]?.version === version, { tries: 100, everyMs: 20 })
  }

  const label = async (key: string, body: unknown) => {
    const res = await app.request('/v1/feedback', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }, env)
    return { status: res.status, body: (await res.json()) as { detail?: string; results?: Array<{ result: string }> } }
  }
  const resultOf = async (key: string, body: unknown) => (await label(key, body)).body.results?.map((r) => r.result).join(',')

  /** Labels counted per version since `before`. */
  const labels = async (): Promise<{ v1: number; v2: number }> => {
    const now = minuteOf(Date.now())
    const rows = async (version: number) => (await store.window(MODEL, version, now - 2, now + 1)).bins.reduce((sum, b) => sum + b.rows, 0)
    return { v1: await rows(1), v2: await rows(2) }
  }
  const added = async (before: { v1: number; v2: number }) => {
    const now = await labels()
    return { v1: now.v1 - before.v1, v2: now.v2 - before.v2 }
  }

  it("a label counts for the version its own tenant was served, whoever else sent the same request id; another tenant's key cannot label it", async () => {
    const id = `order-${Math.random().toString(36).slice(2, 10)}`
    const before = await labels()
    await predict(keys.a, 'shop-a', id, 2)
    await predict(keys.b, 'shop-b', id, 1)
    expect(await resultOf(keys.aLabels, { request_id: id, label: 'high_risk' })).toBe('accepted')
    expect(await added(before)).toEqual({ v1: 0, v2: 1 })
    // B's label for "the same" id is for B's own prediction (version 1), never A's.
    expect(await resultOf(keys.b, { request_id: id, label: 'low_risk' })).toBe('accepted')
    expect(await added(before)).toEqual({ v1: 1, v2: 1 })
    const foreign = await label(keys.b, { request_id: id, label: 'low_risk', tenant: 'shop-a' })
    expect(foreign.status).toBe(403)
    expect(foreign.body.detail).toMatch(/only its own tenant's predictions/)
    // A key with the admin scope may name the tenant: A's instance holds "high_risk" already.
    expect(await resultOf(keys.ops, [{ request_id: id, label: 'low_risk', tenant: 'shop-a' }, { request_id: id, label: 'high_risk', tenant: 'shop-a' }, { request_id: id, label: 'high_risk' }]))
      .toBe('duplicate,accepted,unknown_or_expired')
    expect(await added(before)).toEqual({ v1: 1, v2: 1 })
  })

  it('an id its tenant sends again names the new prediction: its labels start afresh and count for the version now served', async () => {
    const id = `order-${Math.random().toString(36).slice(2, 10)}`
    const before = await labels()
    await predict(keys.a, 'shop-a', id, 2)
    expect(await resultOf(keys.aLabels, { request_id: id, label: 'high_risk' })).toBe('accepted')
    await predict(keys.a, 'shop-a', id, 1)
    expect(await resultOf(keys.aLabels, { request_id: id, label: 'low_risk' })).toBe('accepted')
    expect(await resultOf(keys.aLabels, { request_id: id, label: 'high_risk' })).toBe('duplicate')
    expect(await added(before)).toEqual({ v1: 1, v2: 1 })
  })
})
