import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DECISIONS_METRIC, DURATION_METRIC, REQUESTS_METRIC } from '../../edge/exposition/requests.ts'
import { REQUEST_METRICS_HASH } from '../../edge/stores/tallies/tally.ts'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import { until } from '../backend/support/backend-process.ts'
import type { UpstashRedis } from '../dev/support/upstash-redis.ts'
import { startWorker, type RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient } from '../support/client.ts'
import { startStack, type Stack } from '../support/stack.ts'
import { expectConsistentHistograms } from '../edge/pipeline/request-metrics/histograms.ts'
import { promtoolCheckMetrics } from '../edge/pipeline/request-metrics/promtool.ts'
import { samplesOf, total } from '../edge/pipeline/request-metrics/samples.ts'

/**
 * Two bundled workers in real workerd — two isolates — on one real redis-server behind the
 * local Upstash adapter: each flushes its deltas to one hash, so either one's /metrics shows
 * both isolates' requests. Isolate A flushes only when scraped (its interval is far off);
 * isolate B every 100 ms.
 */

const TOKEN = 'request-metrics-redis-test-token-01'
const MODEL = 'credit-risk'
let stack: Stack
let upstash: UpstashRedis
let a: RunningWorker
let b: RunningWorker
const keys = { web: '', ops: '' }

const predict = (worker: RunningWorker, user: string) => edgeClient(worker.url, { key: keys.web }).predict([demoApplicant(1)], { model: MODEL, entity: { user_id: user } })

const scrape = async (worker: RunningWorker) => {
  const res = await fetch(`${worker.url}/metrics`, { headers: { 'x-api-key': keys.ops } })
  return { status: res.status, text: await res.text() }
}

const ok = { model: MODEL, version: '2', variant: 'stable', code: '200', served_by: 'backend' }

beforeAll(async () => {
  // Only the workers count into Redis; the stack starts A, and B beside it on the same bindings.
  const started = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000, backend: false },
    keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 6_000 }, { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 6_000 }],
    worker: { REDIS_TIMEOUT_MS: '1000', METRICS_FLUSH_MS: '3600000' },
  })
  stack = started
  ;({ upstash, worker: a } = started)
  keys.web = stack.keys.web!
  keys.ops = stack.keys.ops!
  b = await startWorker({
    BACKEND_URL: stack.backend.url, API_KEYS: stack.apiKeys, UPSTASH_REDIS_REST_URL: upstash.adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, REDIS_TIMEOUT_MS: '1000', METRICS_FLUSH_MS: '100',
  })
})

afterAll(async () => {
  await b?.dispose()
  await stack?.stop()
})

describe('edge request metrics summed across isolates in Redis', () => {
  it('adds both isolates\' counts up: A\'s flushed by its own scrape, B\'s by its interval', async () => {
    for (let i = 0; i < 5; i++) expect((await predict(a, `u-a-${i}`)).status).toBe(200)
    for (let i = 0; i < 3; i++) expect((await predict(b, `u-b-${i}`)).status).toBe(200)
    // B's deltas reach Redis within its interval, without a scrape of B.
    await until(async () => Number(await upstash.client.hget(REQUEST_METRICS_HASH, `requests ${MODEL} 2 stable 200 backend`)) === 3, { tries: 100, everyMs: 50 })

    const first = await scrape(a)
    expect(first.status).toBe(200)
    const samples = samplesOf(first.text)
    expect(total(samples, REQUESTS_METRIC, ok)).toBe(8)
    expect(total(samples, `${DURATION_METRIC}_count`, { model: MODEL, version: '2', variant: 'stable' })).toBe(8)
    expectConsistentHistograms(samples)
    expect(await promtoolCheckMetrics(first.text)).toEqual({ code: 0, findings: '' })
  })

  it('counts a rollout change made through one isolate in the other\'s exposition', async () => {
    const admin = edgeClient(a.url, { key: keys.ops })
    const etag = (await admin.rollout.get(MODEL)).headers.get('etag')!
    const rollout = { salt: MODEL, arms: [{ variant: 'stable', version: 2, weight: 100 }] }
    const put = await admin.rollout.put({ rollout }, etag, MODEL)
    expect(put.status).toBe(200)
    // Flushed with the history append, not at A's (hour-long) interval.
    expect(total(samplesOf((await scrape(b)).text), DECISIONS_METRIC, { model: MODEL, action: 'manual' })).toBe(1)
  })

  it('keeps answering while Redis is down, and the scrape says the shared counts cannot be read', async () => {
    await upstash.redis.stop()
    expect((await predict(b, 'u-b-outage')).status).toBe(200)
    const refused = await scrape(b)
    expect(refused.status).toBe(503)
  })
})
