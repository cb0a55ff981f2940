import { Hono } from 'hono'
import { beforeEach, describe, expect, it } from 'vitest'
import { featureSpec, type FeatureSpec } from '../../../../shared/feature-spec.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { CachedFeatureStore } from '../../../../edge/stores/features/cached.ts'
import { CircuitBreaker } from '../../../../edge/backend-client/circuit-breaker.ts'
import { enrich, entityGroups, FEATURES_DEGRADED_HEADER } from '../../../../edge/pipeline/enrich/index.ts'
import { normalize } from '../../../../edge/pipeline/normalize/index.ts'
import { requestId } from '../../../../edge/pipeline/request-id/index.ts'
import { validate } from '../../../../edge/pipeline/validate/index.ts'
import { onError } from '../../../../edge/on-error.ts'
import { Problem, type ProblemBody } from '../../../../edge/problem.ts'
import { flush, manualClock, manualTimers, scriptedStore } from './support.ts'
import { givenIsolate, givenModels } from '../../support/isolate.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { applicant, creditRisk, creditRiskOverridable } from '../validate/fixtures.ts'

/** A spec with two entities, every feature type, and one required entity feature without a default. */
const shop: FeatureSpec = featureSpec.parse({
  input: 'x',
  features: [
    { name: 'amount', type: 'number', min: 0, max: 10_000 },
    { name: 'vip', type: 'boolean', source: { entity: 'user', key: 'user_id', overridable: true }, required: false, default: false },
    { name: 'tier', type: 'category', categories: ['gold', 'silver'], source: { entity: 'user', key: 'user_id' }, required: false, default: 'silver' },
    { name: 'score', type: 'number', min: 0, max: 1, source: { entity: 'user', key: 'user_id' } },
    { name: 'merchant_risk', type: 'number', min: 0, max: 1, source: { entity: 'merchant', key: 'merchant_id' }, required: false, default: 0.5 },
  ],
})
const plain: FeatureSpec = featureSpec.parse({ input: 'x', features: [{ name: 'amount', type: 'number', min: 0, max: 10 }] })

const specs: Record<string, FeatureSpec> = { 'credit-risk': creditRisk, 'credit-risk-override': creditRiskOverridable, shop, plain }
let clock: ReturnType<typeof manualClock>
let timers: ReturnType<typeof manualTimers>
let backing: ReturnType<typeof scriptedStore>
let breaker: CircuitBreaker
let app: Hono<AppEnv>

beforeEach(() => {
  clock = manualClock()
  timers = manualTimers()
  backing = scriptedStore({
    'user:u-1': { account_age_months: '48', num_products: '3', vip: 'true', tier: 'gold', score: '0.75' },
    'user:u-2': { account_age_months: '601', num_products: 'two', score: '0.5' },
    'user:u-3': { account_age_months: '12' },
    'merchant:m-1': { merchant_risk: '0.125' },
  })
  breaker = new CircuitBreaker({ failureThreshold: 3, cooldownMs: 5_000, now: clock.now })
  const store = new CachedFeatureStore(backing.store, { now: clock.now, setTimer: timers.setTimer, ttlMs: 1_000, breaker })
  app = new Hono<AppEnv>()
  app.use('*', givenIsolate({ features: store }), requestId(), requireJson())
  app.post('/v1/models/:model/predict', givenModels(specs), normalize(), validate(), enrich(), (c) => {
    if (c.req.header('x-fail-later')) throw new Problem(502, 'Bad Gateway', 'the backend failed')
    return c.json({ predict: c.get('predict'), degraded: c.get('featuresDegraded') })
  })
  app.onError(onError)
})

const post = (body: unknown, model = 'credit-risk', headers: Record<string, string> = {}) =>
  app.request(`/v1/models/${model}/predict`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } })

interface Echo {
  predict: { instances: Array<Record<string, unknown>>; entity?: Record<string, string> }
  degraded: boolean
}
const echo = async (res: Response) => {
  expect(res.status, await res.clone().text()).toBe(200)
  return (await res.json()) as Echo
}

describe('enrich middleware', () => {
  it('fills every instance with the entity features, read once per request, and is not degraded', async () => {
    const res = await post({ instances: [applicant(), { ...applicant(), age: 30 }, applicant()], entity: { user_id: 'u-1' } })
    const body = await echo(res)
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBeNull()
    expect(body.degraded).toBe(false)
    expect(body.predict.instances).toEqual([
      { ...applicant(), account_age_months: 48, num_products: 3 },
      { ...applicant(), age: 30, account_age_months: 48, num_products: 3 },
      { ...applicant(), account_age_months: 48, num_products: 3 },
    ])
    expect(body.predict.entity).toEqual({ user_id: 'u-1' })
    expect(backing.calls).toEqual(['user:u-1'])
    await echo(await post({ instances: [applicant()], entity: { user_id: 'u-1' } }))
    expect(backing.calls).toEqual(['user:u-1']) // the second request hit the isolate cache
  })

  it('without an entity id there is nothing to read for that entity: defaults apply downstream, not degraded', async () => {
    const res = await post({ instances: [{ amount: 1 }], entity: { user_id: 'u-1' } }, 'shop')
    expect(await echo(res)).toEqual({ predict: { instances: [{ amount: 1, vip: true, tier: 'gold', score: 0.75 }], entity: { user_id: 'u-1' } }, degraded: false })
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBeNull()
    expect(backing.calls).toEqual(['user:u-1']) // no merchant_id, no merchant read
  })

  it('an unknown entity id leaves the features missing (defaults apply) and is not degraded', async () => {
    const res = await post({ instances: [applicant()], entity: { user_id: 'nobody' } })
    expect(await echo(res)).toEqual({ predict: { instances: [applicant()], entity: { user_id: 'nobody' } }, degraded: false })
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBeNull()
    expect(backing.calls).toEqual(['user:nobody'])
  })

  it('a field missing from the hash is left to its default, not degraded', async () => {
    const res = await post({ instances: [applicant()], entity: { user_id: 'u-3' } })
    expect((await echo(res)).predict.instances).toEqual([{ ...applicant(), account_age_months: 12 }])
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBeNull()
  })

  it('drops stored values that do not fit the spec and says the features are degraded', async () => {
    const res = await post({ instances: [applicant()], entity: { user_id: 'u-2' } })
    const body = await echo(res)
    expect(body.predict.instances).toEqual([applicant()]) // 601 > max 600, "two" is not an integer
    expect(body.degraded).toBe(true)
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
  })

  it('when the store is down and nothing is cached: defaults, X-Features-Degraded: 1, the request goes on', async () => {
    backing.state.mode = 'fail'
    const res = await post({ instances: [applicant()], entity: { user_id: 'u-1' } })
    expect(await echo(res)).toEqual({ predict: { instances: [applicant()], entity: { user_id: 'u-1' } }, degraded: true })
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
  })

  it('when the store times out: defaults and the header', async () => {
    backing.state.mode = 'hang'
    const pending = post({ instances: [applicant()], entity: { user_id: 'u-1' } })
    for (let i = 0; i < 20 && timers.pending === 0; i++) await flush()
    timers.fireAll()
    const res = await pending
    expect((await echo(res)).predict.instances).toEqual([applicant()])
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
  })

  it('when the store fails after the TTL: the stale values, marked degraded', async () => {
    await echo(await post({ instances: [applicant()], entity: { user_id: 'u-1' } }))
    clock.advance(1_000)
    backing.state.mode = 'fail'
    const res = await post({ instances: [applicant()], entity: { user_id: 'u-1' } })
    expect(await echo(res)).toMatchObject({ predict: { instances: [{ ...applicant(), account_age_months: 48, num_products: 3 }] }, degraded: true })
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
  })

  it('an open circuit stops store reads; requests still pass, degraded', async () => {
    backing.state.mode = 'fail'
    for (let i = 0; i < 10; i++) {
      const res = await post({ instances: [applicant()], entity: { user_id: `u-${i}` } })
      expect(res.status).toBe(200)
      expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
    }
    expect(breaker.state).toBe('open')
    expect(backing.calls).toHaveLength(3)
  })

  it('keeps the header on a response that a later stage turned into a problem', async () => {
    backing.state.mode = 'fail'
    const res = await post({ instances: [applicant()], entity: { user_id: 'u-1' } }, 'credit-risk', { 'x-fail-later': '1' })
    expect(res.status).toBe(502)
    expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
  })

  describe('overrides', () => {
    it('a request value wins where the spec marks the feature overridable; other instances get the stored one', async () => {
      const res = await post({ instances: [{ ...applicant(), num_products: 9 }, applicant()], entity: { user_id: 'u-1' } }, 'credit-risk-override')
      expect((await echo(res)).predict.instances).toEqual([
        { ...applicant(), account_age_months: 48, num_products: 9 },
        { ...applicant(), account_age_months: 48, num_products: 3 },
      ])
    })

    it('does not read the store when every instance overrides every entity feature', async () => {
      const instance = { ...applicant(), account_age_months: 1, num_products: 2 }
      const res = await post({ instances: [instance, instance], entity: { user_id: 'u-1' } }, 'credit-risk-override')
      expect((await echo(res)).predict.instances).toEqual([instance, instance])
      expect(backing.calls).toEqual([])
    })

    it('a non-overridable entity feature in the request is refused before enrichment (validate)', async () => {
      const res = await post({ instances: [{ ...applicant(), num_products: 9 }], entity: { user_id: 'u-1' } })
      expect(res.status).toBe(400)
      expect(((await res.json()) as ProblemBody).errors).toEqual([{ path: 'instances[0].num_products', message: expect.stringMatching(/may not be sent/) }])
      expect(backing.calls).toEqual([])
    })

    it('on a mixed spec: converts each type, reads each entity once, overridable only where allowed', async () => {
      const res = await post({ instances: [{ amount: 5, vip: false }, { amount: 6 }], entity: { user_id: 'u-1', merchant_id: 'm-1' } }, 'shop')
      expect((await echo(res)).predict.instances).toEqual([
        { amount: 5, vip: false, tier: 'gold', score: 0.75, merchant_risk: 0.125 },
        { amount: 6, vip: true, tier: 'gold', score: 0.75, merchant_risk: 0.125 },
      ])
      expect(backing.calls.sort()).toEqual(['merchant:m-1', 'user:u-1'])
    })
  })

  describe('a required entity feature without a default', () => {
    it('the entity lacks it: 422 naming the entity key', async () => {
      const res = await post({ instances: [{ amount: 5 }], entity: { user_id: 'u-3' } }, 'shop')
      expect(res.status).toBe(422)
      expect(await res.json()).toMatchObject({ status: 422, errors: [{ path: 'entity.user_id', message: expect.stringMatching(/"score"/) }] })
      expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBeNull()
    })

    it('the store is down: 503 with Retry-After and the degraded header', async () => {
      backing.state.mode = 'fail'
      const res = await post({ instances: [{ amount: 5 }], entity: { user_id: 'u-1' } }, 'shop')
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      expect(res.headers.get(FEATURES_DEGRADED_HEADER)).toBe('1')
      expect(await res.json()).toMatchObject({ status: 503, type: 'https://edge-infer.dev/problems/features-unavailable' })
    })
  })

  it('a model without entity features passes straight through', async () => {
    const res = await post({ instances: [{ amount: 1 }] }, 'plain')
    expect(await echo(res)).toEqual({ predict: { instances: [{ amount: 1 }] }, degraded: false })
  })

  it('groups entity features by entity and key, once per spec', () => {
    const groups = entityGroups(shop)
    expect(groups.map((g) => [g.entity, g.key, g.features.map((f) => f.feature.name)])).toEqual([
      ['user', 'user_id', ['vip', 'tier', 'score']],
      ['merchant', 'merchant_id', ['merchant_risk']],
    ])
    expect(entityGroups(shop)).toBe(groups)
  })

})
