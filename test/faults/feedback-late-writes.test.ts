import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { UpstashGroundTruth } from '../../edge/stores/ground-truth/upstash.ts'
import { minuteOf } from '../../shared/drift/report.ts'
import { createUpstashClient } from '../../shared/upstash-client.ts'
import { until } from '../backend/support/backend-process.ts'
import { startUpstashRedis, type UpstashRedis } from '../dev/support/upstash-redis.ts'
import { startLateReplies, type LateReplies } from './support/late-replies.ts'

/**
 * Feedback against a Redis whose replies come late: the proxy applies each command at once and
 * holds its reply past the edge's budget, so a label write "times out" but lands. The documented
 * answer (503, resend the same feedback) must count the label exactly once.
 */

const TOKEN = 'feedback-late-writes-token-0123'
const TIMEOUT_MS = 200
const HOLD_MS = 600
const TENANT = 'shop'
const labeller = generateApiKey('test')
const env = { BACKEND_URL: '', FEEDBACK_MODELS: '*' }

let upstash: UpstashRedis
let late: LateReplies
let app: ReturnType<typeof createApp>
/** The store the app uses (through the proxy), and one straight to Redis for reading the counts. */
let store: UpstashGroundTruth
let direct: UpstashGroundTruth

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
  late = await startLateReplies(upstash.adapter.url)
  store = new UpstashGroundTruth(createUpstashClient({ url: late.url, token: TOKEN }), { timeoutMs: TIMEOUT_MS })
  direct = new UpstashGroundTruth(createUpstashClient({ url: upstash.adapter.url, token: TOKEN }), { timeoutMs: 2_000 })
  app = createApp({
    parts: {
      groundTruth: store,
      keys: new MemoryKeyStore([{ name: 'labels', tenant: TENANT, hash: await hashApiKey(labeller), scopes: ['feedback'], rate_limit_per_minute: 10_000 }]),
    },
  })
})

afterAll(async () => {
  await late?.close()
  await upstash?.stop()
})

const send = async (body: unknown) => {
  const res = await app.request('/v1/feedback', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${labeller}` } }, env)
  return { status: res.status, body: (await res.json()) as { detail?: string; accepted?: number; duplicate?: number; results?: Array<{ result: string }> } }
}

/** Labels counted for the model's version over the minutes around now. */
const counted = async (model: string, version: number): Promise<number> => {
  const now = minuteOf(Date.now())
  const window = await direct.window(model, version, now - 2, now + 1)
  return window.bins.reduce((sum, b) => sum + b.rows, 0)
}

const served = async (model: string, requestId: string) => {
  await direct.serve({ tenant: TENANT, requestId }, { model, version: 2, variant: 'canary', at: Date.now(), labels: ['no', 'yes'], scores: [0.8] }, 600)
}

const fresh = () => ({ model: `late-${Math.random().toString(36).slice(2)}`, id: `order-${Math.random().toString(36).slice(2)}` })

/** The one write of a feedback request: every item's mark and counts in one script. */
const labelWrite = (body: string) => body.includes('HINCRBYFLOAT')
/** The read of the served records. */
const recordRead = (body: string) => /hmget/i.test(body)

describe.each([
  ['the reply to the label write (marks and counts, one script)', labelWrite],
  ['the reply to the record read', recordRead],
])(`feedback when %s comes ${HOLD_MS} ms late (budget ${TIMEOUT_MS} ms)`, (_, held) => {
  it('answers 503 saying a resend is safe, and the resend counts the label exactly once', async () => {
    const { model, id } = fresh()
    await served(model, id)
    late.holdMs = (body) => (held(body) ? HOLD_MS : 0)
    const first = await send({ request_id: id, label: 'yes' })
    late.holdMs = () => 0
    expect(first.status).toBe(503)
    expect(first.body.detail).toMatch(held === labelWrite ? /may or may not have been.*send the same feedback again/ : /nothing was recorded/)
    const resent = await send({ request_id: id, label: 'yes' })
    expect(resent.status).toBe(200)
    expect(resent.body).toMatchObject({ accepted: 1, duplicate: 0 })
    expect(await counted(model, 2)).toBe(1)
    // Sent once more, still one; another label for the instance is a duplicate, and not counted.
    expect((await send({ request_id: id, label: 'yes' })).body).toMatchObject({ accepted: 1 })
    expect((await send({ request_id: id, label: 'no' })).body).toMatchObject({ accepted: 0, duplicate: 1 })
    expect(await counted(model, 2)).toBe(1)
  })
})

describe('feedback when the first label write reaches Redis only after its resend', () => {
  it('counts the label once: the late write finds the mark the resend left', async () => {
    const { model, id } = fresh()
    await served(model, id)
    late.forwardAfterMs = (body) => (labelWrite(body) ? HOLD_MS : 0)
    const first = await send({ request_id: id, label: 'yes' })
    late.forwardAfterMs = () => 0
    expect(first.status).toBe(503)
    expect(late.heldRequests).toBe(1)
    expect((await send({ request_id: id, label: 'yes' })).body).toMatchObject({ accepted: 1 })
    // Bounded by polls, not by the clock: the held write is forwarded and answered.
    await until(() => late.heldRequests === 0, { tries: 200, everyMs: 25 })
    expect(await counted(model, 2)).toBe(1)
  })
})
