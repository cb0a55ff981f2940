import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toStoredHash, UpstashFeatureStore } from '../../../../edge/stores/features/upstash.ts'

describe('toStoredHash', () => {
  it('turns HGETALL\'s flat reply into a hash of strings', () => {
    expect(toStoredHash(['a', '1', 'b', 'x'])).toEqual({ a: '1', b: 'x' })
  })

  it('accepts an object reply (a deserializing client) and keeps values as strings', () => {
    expect(toStoredHash({ a: 48, b: true, c: 'x', d: { n: 1 }, e: null })).toEqual({ a: '48', b: 'true', c: 'x', d: '{"n":1}' })
  })

  it('no key is undefined: null, an empty array, an empty object', () => {
    expect(toStoredHash(null)).toBeUndefined()
    expect(toStoredHash([])).toBeUndefined()
    expect(toStoredHash({})).toBeUndefined()
  })

  it('refuses a reply that is not a hash', () => {
    expect(() => toStoredHash(['a'])).toThrow(/odd/)
    expect(() => toStoredHash('OK')).toThrow(/string/)
  })
})

describe('UpstashFeatureStore', () => {
  it('reads features:{entity}:{id} through the given client', async () => {
    const keys: string[] = []
    const store = new UpstashFeatureStore({ url: 'unused', token: 'unused', client: { hgetall: async (key) => (keys.push(key), ['num_products', '2']) } })
    expect(await store.read('user', 'u-7')).toEqual({ num_products: '2' })
    expect(keys).toEqual(['features:user:u-7'])
  })

  describe('against an endpoint that never answers', () => {
    let server: Server
    let url: string
    beforeAll(async () => {
      server = createServer(() => {}) // holds every request open
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    })
    afterAll(async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    })

    it('aborts the HTTP request after requestTimeoutMs and rejects', async () => {
      const store = new UpstashFeatureStore({ url, token: 't', requestTimeoutMs: 50 })
      await expect(store.read('user', 'u-1')).rejects.toThrow(/abort|timeout/i)
    })
  })
})
