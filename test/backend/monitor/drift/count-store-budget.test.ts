import { describe, expect, it } from 'vitest'
import { readSettings } from '../../../../backend/settings.ts'
import { redisCountStore } from '../../../../backend/monitor/drift/count-store.ts'
import { settledAfter, slowRedis, useFakeTimersPerTest } from '../../../faults/redis-slow.ts'

const BUDGET_MS = 100

useFakeTimersPerTest()

const replies = (command: string) => (command === 'eval' ? 1 : [['0', '3', '2', '1']])
const storeAnsweringAfter = (delayMs: number) =>
  redisCountStore({ url: 'http://127.0.0.1:1', token: 't', timeoutMs: BUDGET_MS, client: slowRedis(() => delayMs, replies) })

describe('redisCountStore within its Redis budget', () => {
  it('applies and reads counts when Redis answers just under the budget', async () => {
    const store = storeAnsweringAfter(BUDGET_MS - 1)
    expect(await settledAfter(BUDGET_MS - 1, store.apply('w', [{ key: 'k', indices: [0], deltas: [1] }]))).toEqual({ value: undefined })
    expect(await settledAfter(BUDGET_MS - 1, store.read(['k']))).toEqual({ value: [new Map([[0, 3], [2, 1]])] })
  })

  it('fails each call once Redis is slower than the budget', async () => {
    const store = storeAnsweringAfter(BUDGET_MS + 1)
    expect(await settledAfter(BUDGET_MS, store.apply('w', [{ key: 'k', indices: [0], deltas: [1] }]))).toMatchObject({ error: { name: 'WriteInDoubt', message: expect.stringMatching(/within 100 ms/) } })
    expect(await settledAfter(BUDGET_MS, store.read(['k']))).toMatchObject({ error: { message: expect.stringMatching(/within 100 ms/) } })
  })
})

describe('DRIFT_REDIS_TIMEOUT_MS', () => {
  it('defaults to 1000 ms and takes a whole number of milliseconds', () => {
    expect(readSettings({}).DRIFT_REDIS_TIMEOUT_MS).toBe(1_000)
    expect(readSettings({ DRIFT_REDIS_TIMEOUT_MS: '250' }).DRIFT_REDIS_TIMEOUT_MS).toBe(250)
  })
})
