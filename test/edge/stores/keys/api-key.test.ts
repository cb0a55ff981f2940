import { describe, expect, it } from 'vitest'
import {
  apiKeysSchema, bytesToHex, rateLimitOf, digestApiKey, digestFromHex, generateApiKey, hashApiKey, isApiKey, keyEntrySchema, timingSafeEqual,
} from '../../../../edge/stores/keys/api-key.ts'

const entry = { name: 'web', hash: 'a'.repeat(64), scopes: ['predict'], rate_limit_per_minute: 600 }

describe('API key format', () => {
  it('generates prefixed keys carrying 32 random bytes', () => {
    const key = generateApiKey()
    expect(key).toMatch(/^ei_live_[A-Za-z0-9_-]{43}$/)
    expect(isApiKey(key)).toBe(true)
    const body = key.slice('ei_live_'.length).replace(/-/g, '+').replace(/_/g, '/')
    expect(Buffer.from(body, 'base64')).toHaveLength(32)
    expect(generateApiKey('test')).toMatch(/^ei_test_/)
  })

  it('never repeats a key', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey()))
    expect(keys.size).toBe(1000)
  })

  it('refuses unsafe environment tags', () => {
    expect(() => generateApiKey('Live')).toThrow(TypeError)
    expect(() => generateApiKey('a_b')).toThrow(TypeError)
    expect(() => generateApiKey('')).toThrow(TypeError)
  })

  it('recognizes only well-formed keys', () => {
    const key = generateApiKey('local')
    expect(isApiKey(`${key}x`)).toBe(false)
    expect(isApiKey(key.slice(0, -1))).toBe(false)
    expect(isApiKey(key.replace('ei_', 'ex_'))).toBe(false)
    expect(isApiKey(` ${key}`)).toBe(false)
    expect(isApiKey('')).toBe(false)
  })
})

describe('hashing and comparison', () => {
  it('hashes with SHA-256 to lowercase hex', async () => {
    expect(await hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    const key = generateApiKey()
    expect(await hashApiKey(key)).toBe(bytesToHex(await digestApiKey(key)))
  })

  it('round-trips digests through hex and rejects other strings', async () => {
    const digest = await digestApiKey('abc')
    expect(digestFromHex(bytesToHex(digest))).toEqual(digest)
    expect(digestFromHex('ABC')).toBeUndefined()
    expect(digestFromHex('A'.repeat(64))).toBeUndefined()
    expect(digestFromHex('a'.repeat(63))).toBeUndefined()
  })

  it('compares byte arrays', () => {
    const a = new Uint8Array([1, 2, 3, 4])
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3, 4]))).toBe(true)
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3, 5]))).toBe(false)
    expect(timingSafeEqual(a, new Uint8Array([0, 2, 3, 4]))).toBe(false)
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3]))).toBe(false)
    expect(timingSafeEqual(new Uint8Array(), new Uint8Array())).toBe(true)
  })
})

describe('stored entries', () => {
  it('accepts a well-formed entry and array', () => {
    expect(keyEntrySchema.parse(entry)).toEqual(entry)
    expect(apiKeysSchema.parse([entry, { ...entry, name: 'ios', hash: 'b'.repeat(64), scopes: ['predict', 'admin'] }])).toHaveLength(2)
  })

  it('refuses bad fields', () => {
    for (const bad of [
      { ...entry, hash: generateApiKey() },
      { ...entry, hash: 'A'.repeat(64) },
      { ...entry, scopes: [] },
      { ...entry, scopes: ['predict', 'predict'] },
      { ...entry, scopes: ['root'] },
      { ...entry, rate_limit_per_minute: 0 },
      { ...entry, rate_limit_per_minute: 1.5 },
      { ...entry, name: '' },
      { ...entry, name: 'has space' },
      { ...entry, key: 'extra field' },
    ]) {
      expect(keyEntrySchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false)
    }
  })

  it('names the limiter that serves a key: exact at its own rate by default, or a [[ratelimits]] binding instead of a rate', () => {
    expect(rateLimitOf(keyEntrySchema.parse(entry))).toEqual({ perMinute: 600 })
    expect(rateLimitOf(keyEntrySchema.parse({ ...entry, rate_limit: 'exact' }))).toEqual({ perMinute: 600 })
    const { rate_limit_per_minute: _, ...unrated } = entry
    expect(rateLimitOf(keyEntrySchema.parse({ ...unrated, rate_limit: 'RATE_LIMIT_FREE' }))).toEqual({ binding: 'RATE_LIMIT_FREE' })
    const issues = (value: unknown) => keyEntrySchema.safeParse(value).error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`)
    expect(issues({ ...entry, rate_limit: 'RATE_LIMIT_FREE' })).toEqual([
      'rate_limit_per_minute: cannot apply to a key limited by the RATE_LIMIT_FREE binding: its limit and period are that binding\'s simple = { limit, period } in wrangler.toml; drop rate_limit_per_minute, or set rate_limit to "exact"',
    ])
    expect(issues(unrated)).toEqual(['rate_limit_per_minute: is required when rate_limit is "exact" (the default)'])
    expect(issues({ ...unrated, rate_limit: 'exact' })).toEqual(['rate_limit_per_minute: is required when rate_limit is "exact" (the default)'])
    for (const name of ['free', 'RATE_LIMIT_', 'RATE_LIMIT_free', 'MY_LIMITER', 'RATE_LIMIT_A-B']) {
      expect(issues({ ...unrated, rate_limit: name })?.[0], name).toMatch(/^rate_limit: must be "exact" or the name of a \[\[ratelimits\]\] binding/)
    }
  })

  it('refuses duplicate names and hashes', () => {
    expect(apiKeysSchema.safeParse([entry, { ...entry, hash: 'b'.repeat(64) }]).success).toBe(false)
    expect(apiKeysSchema.safeParse([entry, { ...entry, name: 'ios' }]).success).toBe(false)
  })
})
