import { Redis } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey } from '../../edge/stores/keys/api-key.ts'
import { encodeInstance, type FeatureValue } from '../../shared/feature-spec.ts'
import { applicant, CREDIT_SPEC, CREDIT_WIDTH } from '../backend/support/applicants.ts'
import { post, until, type BackendProcess } from '../backend/support/backend-process.ts'
import type { RedisServer } from '../dev/support/redis-server.ts'
import type { UpstashAdapter } from '../../dev/upstash-adapter/server.ts'
import { runCreateKey } from '../infra/keys/support/create-key-process.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient, type EdgeClient } from '../support/client.ts'
import { startStack, type Stack } from '../support/stack.ts'

/**
 * The bundled worker in real workerd with UPSTASH_REDIS_REST_URL/TOKEN set, against the real
 * backend and a real redis-server behind the local Upstash adapter: entity features, rate limits
 * and rollouts live in Redis, and a Redis outage degrades features without failing requests.
 * The tests run in order; the last one kills Redis.
 */

const TOKEN = 'worker-redis-test-token-0123456789'
const MODEL = 'credit-risk'

let stack: Stack
let backend: BackendProcess
let redis: RedisServer
let adapter: UpstashAdapter
let worker: RunningWorker
/** A test-side client on the same adapter the worker talks to. */
let client: Redis
const keys = { web: '', tight: '', admin: '' }
let edge: EdgeClient

/** An applicant without the entity features, so they come from Redis (or their defaults). */
const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

/** The backend's P(high_risk) for one full applicant, sent straight to a version as a tensor. */
const backendHighRisk = async (row: Record<string, FeatureValue>, version = '2'): Promise<number> => {
  const data = new Float32Array(CREDIT_WIDTH)
  encodeInstance(CREDIT_SPEC, row, data)
  const res = await post<{ outputs: Array<{ name: string; data: number[] }> }>(`${backend.url}/v2/models/${MODEL}/versions/${version}/infer`, {
    inputs: [{ name: 'features', shape: [1, CREDIT_WIDTH], datatype: 'FP32', data: [Array.from(data)] }],
  })
  expect(res.status).toBe(200)
  return res.body.outputs.find((o) => o.name === 'probabilities')!.data[1]!
}


/** Every key matching `pattern`, by SCAN through the adapter (never KEYS). */
const scanKeys = async (pattern: string): Promise<string[]> => {
  const found: string[] = []
  let cursor: string | number = '0'
  do {
    const [next, batch] = (await client.scan(cursor, { match: pattern, count: 100 })) as [string | number, string[]]
    found.push(...batch)
    cursor = next
  } while (String(cursor) !== '0')
  return found
}

beforeAll(async () => {
  // The backend counts no drift here: only the worker is given Redis.
  const started = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000, backend: false },
    keys: [
      { name: 'web', scopes: ['predict'], rate_limit_per_minute: 6_000 },
      { name: 'tight', scopes: ['predict'], rate_limit_per_minute: 3 },
      { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 600 },
    ],
    worker: {
      MAX_INSTANCES: '64',
      // Generous, so a loaded machine does not degrade a healthy read by accident.
      FEATURE_TIMEOUT_MS: '200',
    },
  })
  stack = started
  ;({ backend, worker } = started)
  ;({ redis, adapter } = started.upstash)
  client = new Redis({ url: adapter.url, token: TOKEN, retry: false, enableTelemetry: false, automaticDeserialization: false })
  keys.web = started.keys.web!
  keys.tight = started.keys.tight!
  keys.admin = started.keys.ops!
  edge = edgeClient(worker.url)
})

afterAll(async () => {
  await stack?.stop()
})

describe('the bundled worker in workerd, with Upstash Redis (adapter + real redis-server)', () => {
  it('accepts a key that keys:create --redis stored in Redis, which the API_KEYS secret does not list', async () => {
    const created = await runCreateKey(['--name', 'redis-issued', '--scopes', 'predict', '--json', '--redis'], { UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN })
    expect(created.code).toBe(0)
    const { key, entry } = JSON.parse(created.stdout) as { key: string; entry: { hash: string } }
    expect(JSON.parse((await client.hget('apikeys', entry.hash)) as string)).toEqual(entry)
    const res = await edge.predict({ instances: [instance(3)], entity: { user_id: 'u-key-from-redis' } }, { key })
    expect(res.status).toBe(200)
    // A key in neither place is still refused.
    expect((await edge.predict({ instances: [instance(3)] }, { key: generateApiKey('test') })).status).toBe(401)
  })

  it('enriches predictions with entity features from Redis hashes', async () => {
    // Far from the defaults (account_age_months 0, num_products 1).
    await client.hset('features:user:u-redis-1', { account_age_months: '240', num_products: '9' })
    const body = (user: string) => ({ instances: [instance(7)], entity: { user_id: user } })

    const known = await edge.predict(body('u-redis-1'), { key: keys.web })
    const unknown = await edge.predict(body('u-redis-unknown'), { key: keys.web })
    for (const res of [known, unknown]) {
      expect(res.status).toBe(200)
      expect(res.headers.get('x-features-degraded')).toBeNull()
      expect(res.body.predictions).toHaveLength(1)
    }
    expect(known.body.predictions[0].scores).not.toEqual(unknown.body.predictions[0].scores)

    // The edge sent exactly those values: the backend scores the same row, encoded by hand, alike.
    expect(known.body.predictions[0].scores.high_risk).toBeCloseTo(await backendHighRisk({ ...instance(7), account_age_months: 240, num_products: 9 }), 5)
    expect(unknown.body.predictions[0].scores.high_risk).toBeCloseTo(await backendHighRisk({ ...instance(7), account_age_months: 0, num_products: 1 }), 5)
  })

  it('keeps rate limits in Redis: the 4th request of a 3/min key is refused with 429', async () => {
    const body = { instances: [instance(1)], entity: { user_id: 'u-redis-1' } }
    for (let i = 0; i < 3; i++) {
      const res = await edge.predict(body, { key: keys.tight })
      expect(res.status).toBe(200)
      expect(res.headers.get('ratelimit-limit')).toBe('3')
      expect(res.headers.get('ratelimit-remaining')).toBe(String(2 - i))
    }
    const refused = await edge.predict(body, { key: keys.tight })
    expect(refused.status).toBe(429)
    expect(refused.headers.get('content-type')).toBe('application/problem+json')
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60)
    expect(refused.headers.get('ratelimit-limit')).toBe('3')
    expect(refused.headers.get('ratelimit-remaining')).toBe('0')
    expect(refused.headers.get('ratelimit-reset')).toMatch(/^\d+$/)

    // The windows are Redis keys (shared by every isolate), not isolate memory.
    const windows = await scanKeys('ratelimit:edge:*')
    expect(windows.some((k) => k.includes(':tight:'))).toBe(true)
    expect(windows.some((k) => k.includes(':web:'))).toBe(true)
  })

  it('stores rollouts in Redis: a 0/100 move to version 1 takes effect within the TTL', async () => {
    const admin = { key: keys.admin }
    const before = await edge.rollout.get(MODEL, admin)
    expect(before.status).toBe(200)
    const etag = before.headers.get('etag')
    expect(etag).toBe('"r0"')
    expect(before.body).toMatchObject({ revision: 0, source: 'default' })

    const rollout = {
      salt: MODEL,
      arms: [{ variant: 'stable', version: 2, weight: 0 }, { variant: 'previous', version: 1, weight: 100 }],
      pinnable: [1, 2],
    }
    const put = await edge.rollout.put({ rollout }, etag!, MODEL, admin)
    expect(put.status).toBe(200)
    expect(put.headers.get('etag')).toBe('"r1"')

    // Within the isolate cache's TTL every user lands on version 1 (bounded polling, no timing assertion).
    const users = ['u-redis-1', 'u-roll-a', 'u-roll-b', 'u-roll-c']
    await until(async () => {
      const answers = await Promise.all(users.map((user) => edge.predict({ instances: [instance(2)], entity: { user_id: user } }, { key: keys.web })))
      return answers.every((a) => a.status === 200 && a.body.version === '1')
    }, { tries: 100, everyMs: 100 })
    const pinned = await edge.predict([instance(2)], { key: keys.web, entity: { user_id: 'u-roll-a' }, version: 2 })
    expect(pinned.status, JSON.stringify(pinned.body)).toBe(200)
    expect(pinned.body.version).toBe('2')

    const after = await edge.rollout.get(MODEL, admin)
    expect(after.headers.get('etag')).toBe('"r1"')
    expect(after.body).toMatchObject({ revision: 1, source: 'stored', rollout })
    // The same PUT sent again (a retry after a lost answer) is the change already made: 200, r1.
    const replay = await edge.rollout.put({ rollout }, etag!, MODEL, admin)
    expect(replay.status).toBe(200)
    expect(replay.headers.get('etag')).toBe('"r1"')
    // Another change on the stale If-Match is refused.
    const other = { ...rollout, arms: [{ variant: 'stable', version: 2, weight: 50 }, { variant: 'previous', version: 1, weight: 50 }] }
    const stale = await edge.rollout.put({ rollout: other }, etag!, MODEL, admin)
    expect(stale.status).toBe(412)

    expect(await scanKeys(`rollout:${MODEL}`)).toEqual([`rollout:${MODEL}`])
    const stored = (await client.hgetall(`rollout:${MODEL}`)) as unknown
    const fields = Array.isArray(stored) ? Object.fromEntries(Array.from({ length: stored.length / 2 }, (_, i) => [stored[2 * i], stored[2 * i + 1]])) : (stored as Record<string, unknown>)
    expect(String(fields.revision)).toBe('1')
    expect(JSON.parse(String(fields.rollout))).toMatchObject(rollout)
  })

  it('keeps answering when Redis dies mid-run: features degrade to defaults, nothing fails', async () => {
    await redis.stop() // SIGKILL
    const body = (user: string, i = 3) => ({ instances: [instance(i)], entity: { user_id: user } })

    // A user never read before: no value anywhere, so the defaults apply and the answer says so.
    const fresh = await edge.predict(body('u-never-read'), { key: keys.web })
    expect(fresh.status, `${JSON.stringify(fresh.body)}\n${worker.logs.slice(-5).join('\n')}`).toBe(200)
    expect(fresh.headers.get('x-features-degraded')).toBe('1')
    expect(fresh.body.predictions[0].scores.high_risk).toBeCloseTo(
      await backendHighRisk({ ...instance(3), account_age_months: 0, num_products: 1 }, fresh.body.version), 5)

    // Well past the rollout cache's TTL (2 s) and the rate limiter's timeout, every request still
    // answers 200: an outage neither turns into errors nor moves traffic off the stored rollout.
    const failures: string[] = []
    const versions = new Set<string>()
    const degraded = new Set<string | null>()
    for (let i = 0; i < 30; i++) {
      const res = await edge.predict(body(`u-outage-${i}`, i), { key: keys.web })
      if (res.status === 200) versions.add(res.body.version)
      else failures.push(`request ${i}: ${res.status} ${JSON.stringify(res.body)}`)
      degraded.add(res.headers.get('x-features-degraded'))
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(failures).toEqual([])
    expect([...degraded]).toEqual(['1'])
    expect([...versions]).toEqual(['1'])

    // The worker process did not crash: later requests still answer.
    expect((await fetch(`${worker.url}/healthz`)).status).toBe(200)
    const later = await edge.predict(body('u-after-outage'), { key: keys.web })
    expect(later.status).toBe(200)
    expect(later.headers.get('x-features-degraded')).toBe('1')
  })
})
