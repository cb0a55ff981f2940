import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { MAX_FEEDBACK_ITEMS } from '../../../edge/routes/feedback.ts'
import { minuteOf } from '../../../shared/drift/report.ts'
import { type LabelOutcome, type LabelWrite } from '../../../edge/stores/ground-truth/ground-truth-store.ts'
import { MemoryGroundTruth } from '../../../edge/stores/ground-truth/memory.ts'
import { UpstashGroundTruth } from '../../../edge/stores/ground-truth/upstash.ts'
import { Redis } from '@upstash/redis'
import { startBackend, type BackendProcess } from '../../backend/support/backend-process.ts'
import { applicant } from '../../backend/support/applicants.ts'

/**
 * Feedback end to end in one isolate (no Redis): predictions through the real backend, recorded
 * for the model with feedback on, labelled through `POST /v1/feedback`, and the labels' realized
 * quality on `GET /v1/models/{m}/quality` and `/metrics`.
 */

let backend: BackendProcess
let app: ReturnType<typeof createApp>
const keys = { client: generateApiKey('test'), labeller: generateApiKey('test'), admin: generateApiKey('test') }
const env = { BACKEND_URL: '', FEEDBACK_MODELS: 'credit-risk', MAX_INSTANCES: '64' }

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

const call = (path: string, key: string, body?: unknown) =>
  app.request(path, body === undefined ? { headers: { authorization: `Bearer ${key}` } } : { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }, env)

interface Predicted {
  request_id: string
  version: string
  predictions: Array<{ label: string; scores: Record<string, number> }>
}

const predict = async (instances: number[], requestId: string, version?: number): Promise<Predicted> => {
  const res = await app.request('/v1/models/credit-risk/predict', {
    method: 'POST',
    body: JSON.stringify({ instances: instances.map(instance), entity: { user_id: 'u-1' } }),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.client}`, 'x-request-id': requestId, ...(version ? { 'x-model-version': String(version) } : {}) },
  }, env)
  expect(res.status).toBe(200)
  return (await res.json()) as Predicted
}

const feedback = async (body: unknown) => {
  const res = await call('/v1/feedback', keys.labeller, body)
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { results: Array<{ result: string; index: number | null; detail?: string }> } }
}

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  env.BACKEND_URL = backend.url
  const store = new MemoryKeyStore([
    { name: 'web', hash: await hashApiKey(keys.client), scopes: ['predict'], rate_limit_per_minute: 10_000 },
    { name: 'labels', tenant: 'web', hash: await hashApiKey(keys.labeller), scopes: ['feedback'], rate_limit_per_minute: 10_000 },
    { name: 'ops', hash: await hashApiKey(keys.admin), scopes: ['admin'], rate_limit_per_minute: 10_000 },
  ])
  app = createApp({ parts: { keys: store } })
})

afterAll(async () => {
  await backend?.stop()
})

describe('POST /v1/feedback', () => {
  it('answers each item: accepted, duplicate (the first label stands), unknown, invalid label or index', async () => {
    const one = await predict([1], 'feedback-test-one')
    const three = await predict([2, 3, 4], 'feedback-test-three')
    const { status, body } = await feedback([
      { request_id: one.request_id, label: 'high_risk' },
      { request_id: one.request_id, label: 'low_risk' },
      { request_id: three.request_id, label: 'low_risk' },
      { request_id: three.request_id, label: 'low_risk', index: 2 },
      { request_id: three.request_id, label: 'low_risk', index: 3 },
      { request_id: three.request_id, label: 'maybe', index: 1 },
      { request_id: 'never-served-0001', label: 'low_risk' },
    ])
    expect(status).toBe(200)
    expect(body.results.map((r) => `${r.result}@${r.index}`)).toEqual(['accepted@0', 'duplicate@0', 'invalid_index@null', 'accepted@2', 'invalid_index@3', 'invalid_label@1', 'unknown_or_expired@null'])
    expect(body).toMatchObject({ accepted: 2, duplicate: 1, unknown_or_expired: 1, invalid_label: 1, invalid_index: 2 })
    expect(body.results[2].detail).toMatch(/3 instances: name one with "index"/)
    // One item alone, not in an array, is a batch of one.
    expect((await feedback({ request_id: three.request_id, label: 'high_risk', index: 0 })).body).toMatchObject({ accepted: 1, results: [{ result: 'accepted', index: 0 }] })
  })

  it('refuses a malformed body whole, with a problem naming the field, and needs the feedback scope', async () => {
    for (const bad of [{ label: 'x' }, [], { request_id: 'feedback-test-one', label: 'high_risk', index: -1 }, { request_id: 'feedback-test-one', label: 'high_risk', extra: 1 }]) {
      const res = await call('/v1/feedback', keys.labeller, bad)
      expect(res.status, JSON.stringify(bad)).toBe(400)
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/)
      expect(((await res.json()) as { errors: unknown[] }).errors.length).toBeGreaterThan(0)
    }
    const tooMany = Array.from({ length: MAX_FEEDBACK_ITEMS + 1 }, () => ({ request_id: 'feedback-test-one', label: 'high_risk' }))
    expect((await call('/v1/feedback', keys.labeller, tooMany)).status).toBe(400)
    expect((await call('/v1/feedback', keys.labeller, '{"request_id": ')).status).toBe(400)
    expect((await call('/v1/feedback', keys.client, { request_id: 'feedback-test-one', label: 'high_risk' })).status).toBe(403)
    expect((await call('/v1/feedback', keys.admin, { request_id: 'feedback-test-one', label: 'high_risk' })).status).toBe(403)
  })

  it('counts the labels into the served version\'s realized quality, shown on the quality route and /metrics', async () => {
    // Version 1, which nothing else here labels: 40 rows labelled with what it predicted, 10 with the opposite.
    const served = await predict(Array.from({ length: 50 }, (_, i) => 100 + i), 'feedback-test-quality', 1)
    const items = served.predictions.map((p, index) => ({ request_id: served.request_id, index, label: index < 40 ? p.label : p.label === 'high_risk' ? 'low_risk' : 'high_risk' }))
    expect((await feedback(items)).body).toMatchObject({ accepted: 50 })
    const res = await call('/v1/models/credit-risk/quality?window=15m', keys.admin)
    expect(res.status).toBe(200)
    const quality = (await res.json()) as { window_minutes: number; versions: Array<{ version: number; realized: { labels: number; accuracy: number; log_loss: number } | null; edge_failures: number; label_delay: Array<{ labels: number }> }> }
    expect(quality.window_minutes).toBe(15)
    const v1 = quality.versions.find((v) => v.version === 1)!
    expect(v1.realized).toMatchObject({ labels: 50, accuracy: 0.8 })
    const logLoss = items.reduce((sum, item, i) => sum - Math.log(served.predictions[i].scores[item.label]), 0) / 50
    expect(v1.realized!.log_loss).toBeCloseTo(logLoss, 4)
    expect(v1.label_delay[0].labels).toBe(50)
    expect(v1.edge_failures).toBe(0)
    // Version 2 has the earlier test's three accepted labels.
    expect(quality.versions.find((v) => v.version === 2)!.realized!.labels).toBe(3)
    const metrics = await (await call('/metrics', keys.admin)).text()
    expect(metrics).toContain('edge_infer_realized_accuracy{model="credit-risk",version="1"} 0.8')
    expect(metrics).toContain('edge_infer_realized_labels{model="credit-risk",version="2"} 3')
    expect(metrics).toMatch(/edge_infer_feedback_items_total\{model="credit-risk",result="accepted"\} 53/)
    expect(metrics).toMatch(/edge_infer_feedback_items_total\{model="none",result="unknown_or_expired"\} 1/)
    expect((await call('/v1/models/credit-risk/quality?window=2d', keys.admin)).status).toBe(400)
    expect((await call('/v1/models/credit-risk/quality', keys.client)).status).toBe(403)
  })

  it('keeps nothing for a model without feedback on: its labels are unknown', async () => {
    // Another configuration is another isolate (and, without Redis, other stores): this runs last.
    const off = { ...env, FEEDBACK_MODELS: 'some-other-model' }
    const res = await app.request('/v1/models/credit-risk/predict', {
      method: 'POST',
      body: JSON.stringify({ instances: [instance(5)], entity: { user_id: 'u-1' } }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.client}`, 'x-request-id': 'feedback-test-off' },
    }, off)
    expect(res.status).toBe(200)
    const answer = await app.request('/v1/feedback', { method: 'POST', body: JSON.stringify({ request_id: 'feedback-test-off', label: 'low_risk' }), headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.labeller}` } }, off)
    expect(await answer.json()).toMatchObject({ accepted: 0, unknown_or_expired: 1 })
  })
})

/** The in-memory store, except that its first label write fails: before anything is written, or after (the answer lost). */
class FailingOnce extends MemoryGroundTruth {
  failed = false
  constructor(private readonly after: boolean) {
    super()
  }

  override async label(writes: readonly LabelWrite[]): Promise<LabelOutcome[]> {
    if (this.failed) return super.label(writes)
    this.failed = true
    if (this.after) await super.label(writes)
    throw new Error('no answer from the store')
  }
}

describe('when a label write fails once', () => {
  it.each([['before it is applied', false], ['after it was applied (its answer lost)', true]])('%s: the 503 says a resend is safe, and the resend is accepted and counted once', async (_, after) => {
    const store = new FailingOnce(after)
    const labeller = generateApiKey('test')
    const failing = createApp({ parts: { groundTruth: store, keys: new MemoryKeyStore([{ name: 'labels', hash: await hashApiKey(labeller), scopes: ['feedback'], rate_limit_per_minute: 10_000 }]) } })
    const key = { tenant: 'labels', requestId: 'order-33333333' }
    await store.serve(key, { model: 'm', version: 2, variant: 'stable', at: Date.now(), labels: ['no', 'yes'], scores: [0.7] }, 60)
    const send = () => failing.request('/v1/feedback', { method: 'POST', body: JSON.stringify({ request_id: key.requestId, label: 'yes' }), headers: { 'content-type': 'application/json', authorization: `Bearer ${labeller}` } }, env)
    const first = await send()
    expect(first.status).toBe(503)
    expect(((await first.json()) as { detail: string }).detail).toMatch(/send the same feedback again: a label already recorded is not counted twice/)
    expect(await (await send()).json()).toMatchObject({ accepted: 1, duplicate: 0 })
    const minute = minuteOf(Date.now())
    const window = await store.window('m', 2, minute - 1, minute + 1)
    expect(window.bins.reduce((sum, b) => sum + b.rows, 0)).toBe(1)
  })
})

describe('a label that comes hours after its prediction', () => {
  it('counts in the minute and hour the prediction was served, not the one it arrived in, with its delay', async () => {
    const store = new MemoryGroundTruth()
    const labeller = generateApiKey('test')
    const app = createApp({ parts: { groundTruth: store, keys: new MemoryKeyStore([{ name: 'labels', hash: await hashApiKey(labeller), scopes: ['feedback'], rate_limit_per_minute: 10_000 }]) } })
    const key = { tenant: 'labels', requestId: 'order-late-0001' }
    const servedAt = Date.now() - 5 * 3_600_000
    await store.serve(key, { model: 'late', version: 2, variant: 'stable', at: servedAt, labels: ['no', 'yes'], scores: [0.7] }, 86_400)
    const res = await app.request('/v1/feedback', { method: 'POST', body: JSON.stringify({ request_id: key.requestId, label: 'yes' }), headers: { 'content-type': 'application/json', authorization: `Bearer ${labeller}` } }, env)
    expect(await res.json()).toMatchObject({ accepted: 1 })
    const rows = async (from: number, to: number) => (await store.window('late', 2, from, to)).bins.reduce((sum, b) => sum + b.rows, 0)
    const served = minuteOf(servedAt)
    const now = minuteOf(Date.now())
    expect(await rows(served, served)).toBe(1)
    expect(await rows(now - 60, now)).toBe(0)
    // Five hours late: in the delay bucket that ends at 6 h.
    expect((await store.window('late', 2, served, served)).delays).toEqual([0, 0, 0, 1, 0, 0, 0, 0])
  })
})

describe('with the served-prediction store unreachable', () => {
  it('still answers predictions, and refuses feedback with a 503 and Retry-After, within the Redis budget', async () => {
    // Nothing listens on port 1: every call fails at once; the budget bounds one that would hang.
    const down = new UpstashGroundTruth(new Redis({ url: 'http://127.0.0.1:1', token: 't', retry: false, enableTelemetry: false }), { timeoutMs: 100 })
    const store = new MemoryKeyStore([
      { name: 'web', hash: await hashApiKey(keys.client), scopes: ['predict'], rate_limit_per_minute: 10_000 },
      { name: 'labels', tenant: 'web', hash: await hashApiKey(keys.labeller), scopes: ['feedback'], rate_limit_per_minute: 10_000 },
    ])
    const broken = createApp({ parts: { keys: store, groundTruth: down } })
    const predicted = await broken.request('/v1/models/credit-risk/predict', {
      method: 'POST',
      body: JSON.stringify({ instances: [instance(7)], entity: { user_id: 'u-1' } }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.client}`, 'x-request-id': 'feedback-test-down' },
    }, env)
    expect(predicted.status).toBe(200)
    const res = await broken.request('/v1/feedback', { method: 'POST', body: JSON.stringify({ request_id: 'feedback-test-down', label: 'low_risk' }), headers: { 'content-type': 'application/json', authorization: `Bearer ${keys.labeller}` } }, env)
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('1')
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/)
    expect(((await res.json()) as { type: string }).type).toMatch(/feedback-unavailable$/)
  })
})
