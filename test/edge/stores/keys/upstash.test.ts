import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey, type KeyEntry } from '../../../../edge/stores/keys/api-key.ts'
import { keyStoreFrom } from '../../../../edge/stores/keys/chained.ts'
import { API_KEYS_HASH, UpstashKeyStore } from '../../../../edge/stores/keys/upstash.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { auth } from '../../../../edge/pipeline/auth/index.ts'
import { onError } from '../../../../edge/on-error.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { startUpstashRedis, type UpstashRedis } from '../../../dev/support/upstash-redis.ts'

const TOKEN = 'upstash-key-store-test-token-0123'

let upstash: UpstashRedis

const issue = async (name: string, scopes: KeyEntry['scopes'] = ['predict']): Promise<{ key: string; entry: KeyEntry }> => {
  const key = generateApiKey('test')
  const entry: KeyEntry = { name, hash: await hashApiKey(key), scopes, rate_limit_per_minute: 60 }
  await upstash.client.hset(API_KEYS_HASH, { [entry.hash]: JSON.stringify(entry) })
  return { key, entry }
}

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN, commandTimeoutMs: 1_000 })
})

afterAll(async () => {
  await upstash?.stop()
})

describe('UpstashKeyStore over a real redis-server', () => {
  it('finds an issued entry, and a revoked one stops working once the isolate TTL has passed', async () => {
    let now = 0
    const store = new UpstashKeyStore(upstash.client, { ttlMs: 30_000, now: () => now })
    const { entry } = await issue('mobile')
    expect(await store.find(entry.hash)).toEqual(entry)
    await upstash.client.hdel(API_KEYS_HASH, entry.hash)
    now = 29_999
    expect(await store.find(entry.hash)).toEqual(entry)
    now = 30_000
    expect(await store.find(entry.hash)).toBeUndefined()
  })

  it('remembers a miss only for the miss TTL, so a key issued after a failed try soon works', async () => {
    let now = 0
    const store = new UpstashKeyStore(upstash.client, { missTtlMs: 5_000, now: () => now })
    const key = generateApiKey('test')
    const hash = await hashApiKey(key)
    expect(await store.find(hash)).toBeUndefined()
    const entry: KeyEntry = { name: 'late', hash, scopes: ['admin'], rate_limit_per_minute: 5 }
    await upstash.client.hset(API_KEYS_HASH, { [hash]: JSON.stringify(entry) })
    now = 4_999
    expect(await store.find(hash)).toBeUndefined()
    now = 5_000
    expect(await store.find(hash)).toEqual(entry)
  })

  it('treats malformed entries and entries filed under another digest as absent', async () => {
    const store = new UpstashKeyStore(upstash.client)
    const { entry } = await issue('victim')
    const other = await hashApiKey(generateApiKey('test'))
    await upstash.client.hset(API_KEYS_HASH, { [other]: JSON.stringify(entry) })
    const broken = await hashApiKey(generateApiKey('test'))
    await upstash.client.hset(API_KEYS_HASH, { [broken]: '{"name":"x","scopes":["root"]}' })
    expect(await store.find(other)).toBeUndefined()
    expect(await store.find(broken)).toBeUndefined()
  })

  it('behind the auth middleware with no API_KEYS secret: 200 for a Redis key, 401 for others, 503 when Redis is down and the key is not cached', async () => {
    const store = new UpstashKeyStore(upstash.client)
    const app = new Hono<AppEnv>()
    app.use('*', givenIsolate({ keys: keyStoreFrom(undefined, store) }), auth({ scope: 'predict' }))
    app.get('/', (c) => c.json(c.get('caller')))
    app.onError(onError)
    const { key } = await issue('web')
    const ok = await app.request('/', { headers: { 'x-api-key': key } }, {})
    expect(ok.status).toBe(200)
    expect(await ok.json()).toMatchObject({ name: 'web' })
    expect((await app.request('/', { headers: { 'x-api-key': generateApiKey('test') } }, {})).status).toBe(401)

    const { key: unseen } = await issue('unseen')
    upstash.redis.signal('SIGSTOP')
    try {
      // Known to this isolate: served from its cache although Redis does not answer.
      expect((await app.request('/', { headers: { 'x-api-key': key } }, {})).status).toBe(200)
      const down = await app.request('/', { headers: { 'x-api-key': unseen } }, {})
      expect(down.status).toBe(503)
      expect(down.headers.get('content-type')).toMatch(/application\/problem\+json/)
      expect(down.headers.get('retry-after')).toBe('1')
    } finally {
      upstash.redis.signal('SIGCONT')
    }
  })

  it('refuses a Redis key whose name an API_KEYS entry holds (they would share a rate-limit bucket), and says so once', async () => {
    const secretKey = generateApiKey('test')
    const secret = JSON.stringify([{ name: 'partner', hash: await hashApiKey(secretKey), scopes: ['predict'], rate_limit_per_minute: 60 }])
    const logged: string[] = []
    const keys = keyStoreFrom(secret, new UpstashKeyStore(upstash.client), (line) => logged.push(line))
    const app = new Hono<AppEnv>()
    app.use('*', givenIsolate({ keys }), auth({ scope: 'predict' }))
    app.get('/', (c) => c.json(c.get('caller')))
    app.onError(onError)
    const { key: clashing } = await issue('partner')
    const { key: distinct } = await issue('partner-2')
    for (let i = 0; i < 2; i++) {
      const refused = await app.request('/', { headers: { 'x-api-key': clashing } })
      expect(refused.status).toBe(401)
      expect(await refused.json()).toMatchObject({ detail: 'the API key is not recognized' })
    }
    expect(logged).toHaveLength(1)
    expect(JSON.parse(logged[0])).toMatchObject({ level: 'error', name: 'partner' })
    expect(logged[0]).not.toContain(clashing)
    expect((await app.request('/', { headers: { 'x-api-key': secretKey } })).status).toBe(200)
    expect(await (await app.request('/', { headers: { 'x-api-key': distinct } })).json()).toMatchObject({ name: 'partner-2' })
  })
})
