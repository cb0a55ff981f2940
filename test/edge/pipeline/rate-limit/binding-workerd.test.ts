import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applicant } from '../../../backend/support/applicants.ts'
import type { UpstashAdapter } from '../../../../dev/upstash-adapter/server.ts'
import { edgeClient, type EdgeClient } from '../../../support/client.ts'
import { startStack, type Stack } from '../../../support/stack.ts'

/**
 * The bundled worker in workerd with Upstash configured (a real redis-server behind the adapter)
 * and a `[[ratelimits]]` binding simulated by Miniflare: a key of the binding's tier is limited by
 * the binding without the limiter's Redis script, an exact key still by the script, and a key
 * naming a binding the worker lacks gets a configuration error.
 */

const TOKEN = 'rate-limit-binding-test-token-0123'
const LIMIT = 3
/** The binding's period: Miniflare counts it in windows aligned to the wall clock. */
const PERIOD_S = 60

let stack: Stack
let adapter: UpstashAdapter
let edge: EdgeClient

beforeAll(async () => {
  stack = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000, backend: false },
    keys: [
      { name: 'exact', scopes: ['predict'], rate_limit_per_minute: LIMIT },
      { name: 'tier', scopes: ['predict'], rate_limit: 'RATE_LIMIT_TEST' },
      { name: 'tier-again', scopes: ['predict'], rate_limit: 'RATE_LIMIT_TEST' },
      { name: 'orphan', scopes: ['predict'], rate_limit: 'RATE_LIMIT_MISSING' },
    ],
    ratelimits: { RATE_LIMIT_TEST: { namespace_id: '9001', simple: { limit: LIMIT, period: PERIOD_S } } },
  })
  adapter = stack.upstash!.adapter
  edge = edgeClient(stack.worker.url)
}, 120_000)

afterAll(async () => {
  await stack?.stop()
})

/**
 * Calls of the limiter's sliding-log script the adapter has passed to Redis so far: each check
 * sends EVALSHA, and the first one Redis does not know yet is sent again as EVAL.
 */
const scriptCalls = () => {
  const { commands } = adapter.stats()
  return { evalsha: commands.EVALSHA ?? 0, eval: commands.EVAL ?? 0 }
}

/** One applicant without the entity's features: a request carries only its own, the user's come from the feature store. */
const predictAs = (key: string, i: number) => {
  const { account_age_months: _a, num_products: _n, ...row } = applicant(i)
  return edge.predict({ instances: [row], entity: { user_id: `u-${i}` } }, { key })
}

const rateHeaders = (headers: Headers) => ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'].map((name) => headers.get(name))

/**
 * LIMIT + 1 predicts of one key, and whether they all fell in one of the binding's windows (the
 * simulated binding starts a fresh count when the wall clock crosses a period boundary).
 */
const burst = async (key: string) => {
  const window = () => Math.floor(Date.now() / (PERIOD_S * 1000))
  const first = window()
  const answers = []
  for (let i = 0; i <= LIMIT; i++) answers.push(await predictAs(key, i))
  return { answers, oneWindow: window() === first }
}

describe('rate limits in workerd: exact keys through Redis, binding keys through [[ratelimits]]', () => {
  it('limits a binding-tier key by the binding, with no call of the Redis limiter, and answers 429 with Retry-After', async () => {
    const before = scriptCalls()
    let run = await burst(stack.keys.tier!)
    // A burst split by a window boundary proves nothing: the other key runs it again in the next window.
    if (!run.oneWindow) run = await burst(stack.keys['tier-again']!)
    expect(run.oneWindow).toBe(true)
    const admitted = run.answers.slice(0, LIMIT)
    for (const res of admitted) {
      expect(res.status).toBe(200)
      // The binding says only yes or no: no limit, remaining or reset could be told truthfully.
      expect(rateHeaders(res.headers)).toEqual([null, null, null])
    }
    const refused = run.answers[LIMIT]!
    expect(refused.status).toBe(429)
    expect(refused.headers.get('content-type')).toBe('application/problem+json')
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(refused.body).toMatchObject({ status: 429, title: 'Too Many Requests', detail: expect.stringContaining('its rate-limit tier RATE_LIMIT_TEST') })
    expect(scriptCalls()).toEqual(before)
  })

  it('still limits an exact key through the Redis script, one call per request, with RateLimit-* headers', async () => {
    const before = scriptCalls()
    const { answers } = await burst(stack.keys.exact!)
    expect(answers.slice(0, LIMIT).map((res) => [res.status, res.headers.get('ratelimit-limit'), res.headers.get('ratelimit-remaining')])).toEqual([
      [200, '3', '2'],
      [200, '3', '1'],
      [200, '3', '0'],
    ])
    const refused = answers[LIMIT]!
    expect(refused.status).toBe(429)
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60)
    const after = scriptCalls()
    expect(after.evalsha - before.evalsha).toBe(LIMIT + 1)
    expect(after.eval - before.eval).toBeLessThanOrEqual(1)
  })

  it('answers a key naming a binding the worker lacks with a 503 problem, told to the operator once', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await predictAs(stack.keys.orphan!, i)
      expect(res.status).toBe(503)
      expect(res.body).toMatchObject({ type: 'https://edge-infer.dev/problems/rate-limit-misconfigured', status: 503 })
      expect(JSON.stringify(res.body)).not.toContain('RATE_LIMIT_MISSING')
    }
    const told = stack.worker.logs.filter((line) => line.includes('names the rate-limit binding RATE_LIMIT_MISSING'))
    expect(told).toHaveLength(1)
    // The other keys are unaffected.
    expect((await predictAs(stack.keys['tier-again']!, 9)).status).not.toBe(503)
  })
})
