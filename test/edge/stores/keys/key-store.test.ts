import { Hono } from 'hono'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type KeyEntry, generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { KeyConfigError, parseApiKeys } from '../../../../edge/stores/keys/key-store.ts'
import { MemoryKeyStore } from '../../../../edge/stores/keys/memory.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { auth } from '../../../../edge/pipeline/auth/index.ts'
import { isolateCache } from '../../../../edge/isolate.ts'
import { isolate } from '../../../../edge/pipeline/isolate/index.ts'
import { notFound, onError } from '../../../../edge/on-error.ts'

const entryFor = async (name: string, key: string, scopes: KeyEntry['scopes'] = ['predict']): Promise<KeyEntry> =>
  ({ name, hash: await hashApiKey(key), scopes, rate_limit_per_minute: 60 })

afterEach(() => {
  vi.restoreAllMocks()
})

describe('MemoryKeyStore', () => {
  it('finds entries by hash, whichever position they hold', async () => {
    const keys = [generateApiKey(), generateApiKey(), generateApiKey()]
    const entries = await Promise.all(keys.map((key, i) => entryFor(`k${i}`, key)))
    const store = new MemoryKeyStore(entries)
    expect(store.size).toBe(3)
    for (const [i, key] of keys.entries()) expect((await store.find(await hashApiKey(key)))?.name).toBe(`k${i}`)
    expect(await store.find(await hashApiKey(generateApiKey()))).toBeUndefined()
    expect(await store.find('not a hash')).toBeUndefined()
    expect(await new MemoryKeyStore([]).find(await hashApiKey(keys[0]))).toBeUndefined()
  })

  it('builds from the API_KEYS JSON', async () => {
    const key = generateApiKey()
    const store = MemoryKeyStore.fromSecret(JSON.stringify([await entryFor('web', key)]))
    expect((await store.find(await hashApiKey(key)))?.name).toBe('web')
    expect(MemoryKeyStore.fromSecret('[]').size).toBe(0)
  })

  it('refuses invalid entries at construction', async () => {
    const entry = await entryFor('web', generateApiKey())
    expect(() => new MemoryKeyStore([entry, entry])).toThrow(KeyConfigError)
  })
})

describe('parseApiKeys', () => {
  it('explains a missing secret', () => {
    expect(() => parseApiKeys(undefined)).toThrow(/API_KEYS is not set.*keys:create/)
    expect(() => parseApiKeys('  ')).toThrow(KeyConfigError)
  })

  it('says which entry and field is wrong', async () => {
    const good = await entryFor('web', generateApiKey())
    const json = JSON.stringify([good, { ...good, name: 'ios', scopes: ['root'], rate_limit_per_minute: 0 }])
    expect(() => parseApiKeys(json)).toThrow(/API_KEYS\[1\]\.scopes\[0\]: .*API_KEYS\[1\]\.rate_limit_per_minute: /)
    expect(() => parseApiKeys('{}')).toThrow(/API_KEYS is invalid: API_KEYS: /)
  })

  it('never echoes the secret, even when a raw key was pasted into it', async () => {
    const key = generateApiKey()
    const invalidJson = `[{"name": "web", "hash": "${key}",]`
    const rawKeyAsHash = JSON.stringify([{ ...(await entryFor('web', key)), hash: key }])
    for (const secret of [invalidJson, rawKeyAsHash, key]) {
      let message = ''
      try {
        parseApiKeys(secret)
      } catch (err) {
        expect(err).toBeInstanceOf(KeyConfigError)
        message = (err as Error).message
      }
      expect(message).not.toBe('')
      expect(message).not.toContain(key)
      expect(message).not.toContain(key.slice(8, 20))
    }
  })
})

describe('the isolate key store from the API_KEYS binding', () => {
  const appWith = () => {
    const app = new Hono<AppEnv>()
    app.use('*', isolate({ isolateFor: isolateCache() }), auth())
    app.get('/ok', (c) => c.json({ caller: c.get('caller').name }))
    app.notFound(notFound)
    app.onError(onError)
    return app
  }

  it('reads API_KEYS from the request environment and follows changes', async () => {
    const app = appWith()
    const [a, b] = [generateApiKey(), generateApiKey()]
    const envA = { BACKEND_URL: 'x', API_KEYS: JSON.stringify([await entryFor('a', a)]) }
    const envB = { BACKEND_URL: 'x', API_KEYS: JSON.stringify([await entryFor('b', b)]) }
    const ok = await app.request('/ok', { headers: { 'x-api-key': a } }, envA)
    expect(await ok.json()).toEqual({ caller: 'a' })
    expect((await app.request('/ok', { headers: { 'x-api-key': a } }, envB)).status).toBe(401)
    expect((await app.request('/ok', { headers: { 'x-api-key': b } }, envB)).status).toBe(200)
  })

  it('answers 503 for an invalid secret, logging the reason once and never the secret', async () => {
    const logged: string[] = []
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void logged.push(args.join(' ')))
    const app = appWith()
    const key = generateApiKey()
    const env = { BACKEND_URL: 'x', API_KEYS: `[{"name":"web","hash":"${key}"` }
    for (let i = 0; i < 3; i++) {
      const res = await app.request('/ok', { headers: { 'x-api-key': key } }, env)
      expect(res.status).toBe(503)
      const text = await res.text()
      expect(JSON.parse(text)).toMatchObject({ status: 503, title: 'Service Unavailable', type: 'https://edge-infer.dev/problems/auth-misconfigured' })
      expect(text).not.toContain(key)
    }
    expect(logged).toHaveLength(1)
    expect(logged[0]).toContain('API_KEYS is not valid JSON')
    expect(logged[0]).not.toContain(key)
  })
})
