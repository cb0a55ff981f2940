import { Redis } from '@upstash/redis'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUpstashAdapter, type UpstashAdapter } from '../../../../dev/upstash-adapter/server.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { CachedFeatureStore } from '../../../../edge/stores/features/cached.ts'
import { UpstashFeatureStore } from '../../../../edge/stores/features/upstash.ts'
import { CircuitBreaker } from '../../../../edge/backend-client/circuit-breaker.ts'
import { enrich, FEATURES_DEGRADED_HEADER } from '../../../../edge/pipeline/enrich/index.ts'
import { normalize } from '../../../../edge/pipeline/normalize/index.ts'
import { requestId } from '../../../../edge/pipeline/request-id/index.ts'
import { validate } from '../../../../edge/pipeline/validate/index.ts'
import { onError } from '../../../../edge/on-error.ts'
import { startRedisServer, type RedisServer } from '../../../dev/support/redis-server.ts'
import { applicant, creditRisk } from '../../pipeline/validate/fixtures.ts'
import { givenIsolate, givenModels } from '../../support/isolate.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { manualClock } from '../../pipeline/enrich/support.ts'

const TOKEN = 'feature-store-test-token-0123456789'

let redis: RedisServer
let adapter: UpstashAdapter
/** A plain client that writes what the store should read. */
let writer: Redis

const seed = async () => {
  await writer.hset('features:user:u-1', { account_age_months: '48', num_products: '3' })
  await writer.hset('features:user:u-2', { account_age_months: '007', num_products: '1' })
  await writer.hset('features:user:u-odd', { note: '{"a":1}', big: '12345678901234567890' })
}

beforeAll(async () => {
  redis = await startRedisServer()
  adapter = await startUpstashAdapter({ redisPort: redis.port, token: TOKEN, commandTimeoutMs: 2_000 })
  writer = new Redis({ url: adapter.url, token: TOKEN, enableTelemetry: false, retry: false })
  await seed()
})

afterAll(async () => {
  await adapter?.close()
  await redis?.stop()
})

describe('UpstashFeatureStore against a real redis-server through the Upstash adapter', () => {
  it('returns a hash written with HSET, values as the stored strings', async () => {
    const store = new UpstashFeatureStore({ url: adapter.url, token: TOKEN })
    expect(await store.read('user', 'u-1')).toEqual({ account_age_months: '48', num_products: '3' })
    // No automatic JSON deserialization: "007", JSON text and big integers stay as stored.
    expect(await store.read('user', 'u-2')).toEqual({ account_age_months: '007', num_products: '1' })
    expect(await store.read('user', 'u-odd')).toEqual({ note: '{"a":1}', big: '12345678901234567890' })
  })

  it('an entity without a hash reads as undefined', async () => {
    const store = new UpstashFeatureStore({ url: adapter.url, token: TOKEN })
    expect(await store.read('user', 'nobody')).toBeUndefined()
  })

  it('ids with separators and unicode address their own key', async () => {
    await writer.hset('features:user:a:b/ü c', { num_products: '4' })
    const store = new UpstashFeatureStore({ url: adapter.url, token: TOKEN })
    expect(await store.read('user', 'a:b/ü c')).toEqual({ num_products: '4' })
  })

  it('a wrong token rejects (so the cache counts it as a store failure)', async () => {
    const store = new UpstashFeatureStore({ url: adapter.url, token: 'wrong-token' })
    await expect(store.read('user', 'u-1')).rejects.toThrow()
  })
})

describe('enrichment through the real store while redis-server goes away', () => {
  const clock = manualClock()
  const breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 5_000, now: clock.now })
  let cache: CachedFeatureStore
  let app: Hono<AppEnv>

  beforeAll(() => {
    // A generous budget: this machine may be busy; the timeout path has its own test (SIGSTOP).
    cache = new CachedFeatureStore(new UpstashFeatureStore({ url: adapter.url, token: TOKEN }), { now: clock.now, ttlMs: 1_000, breaker, timeoutMs: 5_000 })
    app = new Hono<AppEnv>()
    app.use('*', givenIsolate({ features: cache }), requestId(), requireJson())
    app.post('/v1/models/:model/predict', givenModels({ 'credit-risk': creditRisk }), normalize(), validate(), enrich(), (c) =>
      c.json({ instances: c.get('predict').instances, degraded: c.get('featuresDegraded') }),
    )
    app.onError(onError)
  })

  const predict = async (userId: string) => {
    const res = await app.request('/v1/models/credit-risk/predict', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ instances: [applicant()], entity: { user_id: userId } }),
    })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { instances: Array<Record<string, unknown>>; degraded: boolean }
    return { header: res.headers.get(FEATURES_DEGRADED_HEADER), degraded: body.degraded, instance: body.instances[0] }
  }

  it('while Redis is up: fresh values, no header', async () => {
    expect(await predict('u-1')).toEqual({ header: null, degraded: false, instance: { ...applicant(), account_age_months: 48, num_products: 3 } })
    expect(await predict('u-2')).toEqual({ header: null, degraded: false, instance: { ...applicant(), account_age_months: 7, num_products: 1 } })
  })

  it('Redis stopped mid-run: cached values while fresh, then stale with the header, defaults for the uncached; the circuit opens', async () => {
    await redis.stop()
    // Still fresh in the isolate cache: nothing is degraded yet.
    expect(await predict('u-1')).toEqual({ header: null, degraded: false, instance: { ...applicant(), account_age_months: 48, num_products: 3 } })

    clock.advance(1_000) // past the TTL
    expect(await predict('u-1')).toEqual({ header: '1', degraded: true, instance: { ...applicant(), account_age_months: 48, num_products: 3 } })
    expect(await predict('u-3')).toEqual({ header: '1', degraded: true, instance: applicant() }) // never cached: defaults downstream
    expect(await predict('u-2')).toEqual({ header: '1', degraded: true, instance: { ...applicant(), account_age_months: 7, num_products: 1 } })
    expect(breaker.state).toBe('open')
    expect(cache.stats()).toMatchObject({ errors: 3, stale: 2, none: 1 })

    // Open: no more calls to the store, the requests still go through.
    for (let i = 0; i < 5; i++) expect(await predict(`u-${i + 10}`)).toMatchObject({ header: '1', degraded: true })
    expect(cache.stats()).toMatchObject({ errors: 3, shortCircuited: 5 })
  })

  it('Redis back: after the cooldown one probe closes the circuit and values are fresh again', async () => {
    redis = await startRedisServer(redis.port)
    await seed()
    clock.advance(5_000)
    expect(await predict('u-1')).toEqual({ header: null, degraded: false, instance: { ...applicant(), account_age_months: 48, num_products: 3 } })
    expect(breaker.state).toBe('closed')
    expect(await predict('u-3')).toEqual({ header: null, degraded: false, instance: applicant() })
  })

  it('a Redis that stops answering (SIGSTOP) runs out the time budget: degraded, and the request is answered', async () => {
    const budgeted = new CachedFeatureStore(new UpstashFeatureStore({ url: adapter.url, token: TOKEN }), { timeoutMs: 100, breaker: new CircuitBreaker() })
    expect(await budgeted.read('user', 'u-1')).toMatchObject({ source: 'store', degraded: false })
    redis.signal('SIGSTOP')
    try {
      // Redis cannot answer while stopped, so this read can only end by its budget.
      expect(await budgeted.read('user', 'u-2')).toEqual({ values: {}, found: false, source: 'none', degraded: true })
      expect(budgeted.stats().timeouts).toBe(1)
    } finally {
      redis.signal('SIGCONT')
    }
  })
})
