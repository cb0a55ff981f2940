import { describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey, type KeyEntry } from '../../../../edge/stores/keys/api-key.ts'
import { UpstashKeyStore } from '../../../../edge/stores/keys/upstash.ts'
import { settledAfter, slowRedis, useFakeTimersPerTest } from '../../../faults/redis-slow.ts'

const BUDGET_MS = 100

const entry: KeyEntry = { name: 'mobile', hash: await hashApiKey(generateApiKey('test')), scopes: ['predict'], rate_limit_per_minute: 60 }

useFakeTimersPerTest()

const storeAnsweringAfter = (delayMs: number) => new UpstashKeyStore(slowRedis(() => delayMs, () => JSON.stringify(entry)), { timeoutMs: BUDGET_MS })

describe('UpstashKeyStore within its Redis budget', () => {
  it('takes an answer that comes just under the budget', async () => {
    expect(await settledAfter(BUDGET_MS - 1, storeAnsweringAfter(BUDGET_MS - 1).find(entry.hash))).toEqual({ value: entry })
  })

  it('answers 503 with Retry-After (never 401, never a hang) for an unknown key when Redis is slower than the budget', async () => {
    expect(await settledAfter(BUDGET_MS, storeAnsweringAfter(BUDGET_MS + 1).find(entry.hash))).toMatchObject({ error: { status: 503, extra: { headers: { 'retry-after': '1' } } } })
  })

  it('serves a key it already knows from its cache when Redis is slower than the budget', async () => {
    let now = 0
    let delayMs = 0
    const store = new UpstashKeyStore(slowRedis(() => delayMs, () => JSON.stringify(entry)), { timeoutMs: BUDGET_MS, ttlMs: 1_000, now: () => now })
    expect(await settledAfter(0, store.find(entry.hash))).toEqual({ value: entry })
    now = 5_000
    delayMs = BUDGET_MS + 1
    expect(await settledAfter(BUDGET_MS, store.find(entry.hash))).toEqual({ value: entry })
  })
})
