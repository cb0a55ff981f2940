import { readFileSync } from 'node:fs'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { AppEnv, Bindings } from '../../../../edge/env.ts'
import { featureKey } from '../../../../edge/pipeline/enrich/feature-store.ts'
import { MemoryFeatureStore } from '../../../../edge/pipeline/enrich/memory-store.ts'
import { CachedFeatureStore } from '../../../../edge/pipeline/enrich/cached-store.ts'
import { DEFAULT_FEATURE_SEED, featureStoreResolver, featureTimeoutMs } from '../../../../edge/pipeline/enrich/resolve-store.ts'
import { UpstashFeatureStore } from '../../../../edge/pipeline/enrich/upstash-store.ts'
import { convertStored } from '../../../../edge/pipeline/enrich/convert.ts'
import { creditRisk } from '../validate/fixtures.ts'

describe('MemoryFeatureStore', () => {
  it('holds seeded values as Redis would: strings, one hash per entity id', async () => {
    const store = new MemoryFeatureStore({ user: { 'u-1': { account_age_months: 48, vip: true, tier: 'gold' } } })
    expect(await store.read('user', 'u-1')).toEqual({ account_age_months: '48', vip: 'true', tier: 'gold' })
    expect(await store.read('user', 'u-2')).toBeUndefined()
    expect(await store.read('merchant', 'u-1')).toBeUndefined()
  })

  it('set() adds fields like HSET, delete() drops the hash; readers get copies', async () => {
    const store = new MemoryFeatureStore()
    store.set('user', 'u-9', { a: 1 })
    store.set('user', 'u-9', { b: 'x' })
    const read = (await store.read('user', 'u-9'))!
    expect(read).toEqual({ a: '1', b: 'x' })
    read.a = 'changed'
    expect((await store.read('user', 'u-9'))!.a).toBe('1')
    store.delete('user', 'u-9')
    expect(await store.read('user', 'u-9')).toBeUndefined()
  })

  it('refuses a malformed seed', () => {
    expect(() => new MemoryFeatureStore({ user: [] } as never)).toThrow(/must map ids/)
    expect(() => new MemoryFeatureStore({ user: { 'u-1': 5 } } as never)).toThrow(/must be an object/)
    expect(() => new MemoryFeatureStore({ user: { 'u-1': { a: null } } } as never)).toThrow(/string, number or boolean/)
  })

  it('the Redis key of an entity hash is features:{entity}:{id}', () => {
    expect(featureKey('user', 'u-1')).toBe('features:user:u-1')
  })
})

describe('edge/pipeline/enrich/demo-seed.json (the embedded default)', () => {
  it('is the default seed, and every demo user has valid credit-risk entity features', async () => {
    expect(DEFAULT_FEATURE_SEED).toEqual(JSON.parse(readFileSync('edge/pipeline/enrich/demo-seed.json', 'utf8')))
    const store = new MemoryFeatureStore(DEFAULT_FEATURE_SEED)
    const entityFeatures = creditRisk.features.filter((f) => f.source !== 'request')
    expect(entityFeatures.map((f) => f.name)).toEqual(['account_age_months', 'num_products'])
    for (const id of ['u-1', 'u-2', 'u-3', 'u-4', 'u-5']) {
      const hash = (await store.read('user', id))!
      for (const f of entityFeatures) expect(convertStored(f, hash[f.name]), `${id}.${f.name}`).toBeDefined()
    }
  })
})

describe('featureStoreResolver', () => {
  const resolveWith = async (resolve: ReturnType<typeof featureStoreResolver>, env: Partial<Bindings>) => {
    const app = new Hono<AppEnv>()
    let store: CachedFeatureStore | undefined
    app.get('/', (c) => {
      store = resolve(c)
      return c.text('ok')
    })
    await app.request('/', {}, env)
    return store!
  }

  it('builds one cached store per isolate and configuration: memory without Upstash credentials', async () => {
    const built: string[] = []
    const resolve = featureStoreResolver(undefined, {
      storeFor: (env, seed) => {
        const store = env.UPSTASH_REDIS_REST_URL && env.UPSTASH_REDIS_REST_TOKEN ? new UpstashFeatureStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }) : new MemoryFeatureStore(seed)
        built.push(store.constructor.name)
        return store
      },
    })
    const a = await resolveWith(resolve, {})
    const b = await resolveWith(resolve, {})
    expect(a).toBe(b)
    expect(await a.read('user', 'u-1')).toMatchObject({ source: 'store', found: true, values: { account_age_months: '48' } })
    const upstash = await resolveWith(resolve, { UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:1', UPSTASH_REDIS_REST_TOKEN: 't' })
    expect(upstash).not.toBe(a)
    expect(await resolveWith(resolve, { UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:1' })).not.toBe(upstash) // a URL alone is not enough
    expect(built).toEqual(['MemoryFeatureStore', 'UpstashFeatureStore', 'MemoryFeatureStore'])
  })

  it('uses the given seed', async () => {
    const store = await resolveWith(featureStoreResolver({ user: { 'x-1': { num_products: 7 } } }), {})
    expect(await store.read('user', 'x-1')).toMatchObject({ values: { num_products: '7' } })
    expect(await store.read('user', 'u-1')).toMatchObject({ found: false, degraded: false })
  })

  it('reads the time budget from FEATURE_TIMEOUT_MS (default 25 ms)', () => {
    expect(featureTimeoutMs({})).toBe(25)
    expect(featureTimeoutMs(undefined)).toBe(25)
    expect(featureTimeoutMs({ FEATURE_TIMEOUT_MS: '40' })).toBe(40)
    expect(featureTimeoutMs({ FEATURE_TIMEOUT_MS: ' 7.5 ' })).toBe(7.5)
    for (const bad of ['', '0', '-5', 'abc', 'Infinity']) expect(featureTimeoutMs({ FEATURE_TIMEOUT_MS: bad }), bad).toBe(25)
  })
})
