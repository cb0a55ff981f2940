import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../../edge/pipeline/auth/api-key.ts'
import { DECISIONS_METRIC, DURATION_METRIC, REQUESTS_METRIC } from '../../../../edge/pipeline/request-metrics/exposition.ts'
import { REQUEST_METRICS_HASH } from '../../../../edge/stores/tallies/tally.ts'
import { applicant } from '../../../backend/support/applicants.ts'
import { startBackend, until, type BackendProcess } from '../../../backend/support/backend-process.ts'
import { startUpstashRedis, type UpstashRedis } from '../../../dev/support/upstash-redis.ts'
import { startWorker, type RunningWorker } from '../../support/workerd.ts'
import { expectConsistentHistograms } from './histograms.ts'
import { promtoolCheckMetrics } from './promtool.ts'
import { samplesOf, total } from './samples.ts'

/**
 * Two bundled workers in real workerd — two isolates — on one real redis-server behind the
 * local Upstash adapter: each flushes its deltas to one hash, so either one's /metrics shows
 * both isolates' requests. Isolate A flushes only when scraped (its interval is far off);
 * isolate B every 100 ms.
 */

const TOKEN = 'request-metrics-redis-test-token-01'
const MODEL = 'credit-risk'
let backend: BackendProcess
let upstash: UpstashRedis
let a: RunningWorker
let b: RunningWorker
const keys = { web: generateApiKey('test'), ops: generateApiKey('test') }

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

const predict = (worker: RunningWorker, user: string) =>
  fetch(`${worker.url}/v1/models/${MODEL}/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': keys.web },
    body: JSON.stringify({ instances: [instance(1)], entity: { user_id: user } }),
  })

const scrape = async (worker: RunningWorker) => {
  const res = await fetch(`${worker.url}/metrics`, { headers: { 'x-api-key': keys.ops } })
  return { status: res.status, text: await res.text() }
}

const ok = { model: MODEL, version: '2', variant: 'stable', code: '200', served_by: 'backend' }

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  upstash = await startUpstashRedis({ token: TOKEN, commandTimeoutMs: 2_000 })
  const entries = [
    { name: 'web', hash: await hashApiKey(keys.web), scopes: ['predict'], rate_limit_per_minute: 6_000 },
    { name: 'ops', hash: await hashApiKey(keys.ops), scopes: ['admin'], rate_limit_per_minute: 6_000 },
  ]
  const bindings = { BACKEND_URL: backend.url, API_KEYS: JSON.stringify(entries), UPSTASH_REDIS_REST_URL: upstash.adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, REDIS_TIMEOUT_MS: '1000' }
  a = await startWorker({ ...bindings, METRICS_FLUSH_MS: '3600000' })
  b = await startWorker({ ...bindings, METRICS_FLUSH_MS: '100' })
})

afterAll(async () => {
  await a?.dispose()
  await b?.dispose()
  await upstash?.stop()
  await backend?.stop()
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
    const admin = { 'x-api-key': keys.ops }
    const url = `${a.url}/v1/models/${MODEL}/rollout`
    const etag = (await fetch(url, { headers: admin })).headers.get('etag')!
    const rollout = { salt: MODEL, arms: [{ variant: 'stable', version: 2, weight: 100 }] }
    const put = await fetch(url, { method: 'PUT', headers: { ...admin, 'content-type': 'application/json', 'if-match': etag }, body: JSON.stringify({ rollout }) })
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
