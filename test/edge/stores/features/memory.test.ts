import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { featureKey } from '../../../../edge/stores/features/feature-store.ts'
import { MemoryFeatureStore } from '../../../../edge/stores/features/memory.ts'
import { DEFAULT_FEATURE_SEED } from '../../../../edge/stores/features/memory.ts'
import { convertStored } from '../../../../edge/pipeline/enrich/convert.ts'
import { creditRisk } from '../../pipeline/validate/fixtures.ts'

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

describe('edge/stores/features/demo-seed.json (the embedded default)', () => {
  it('is the default seed, and every demo user has valid credit-risk entity features', async () => {
    expect(DEFAULT_FEATURE_SEED).toEqual(JSON.parse(readFileSync('edge/stores/features/demo-seed.json', 'utf8')))
    const store = new MemoryFeatureStore(DEFAULT_FEATURE_SEED)
    const entityFeatures = creditRisk.features.filter((f) => f.source !== 'request')
    expect(entityFeatures.map((f) => f.name)).toEqual(['account_age_months', 'num_products'])
    for (const id of ['u-1', 'u-2', 'u-3', 'u-4', 'u-5']) {
      const hash = (await store.read('user', id))!
      for (const f of entityFeatures) expect(convertStored(f, hash[f.name]), `${id}.${f.name}`).toBeDefined()
    }
  })
})
