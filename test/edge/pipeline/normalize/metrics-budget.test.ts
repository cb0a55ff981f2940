import { describe, expect, it } from 'vitest'
import { UpstashNormalizationMetrics } from '../../../../edge/pipeline/normalize/metrics.ts'
import { settledAfter, slowRedis, useFakeTimersPerTest } from '../../../faults/redis-slow.ts'

const BUDGET_MS = 100

useFakeTimersPerTest()

const fields = () => ({ 'ios:requests': '2', 'ios:fixes': '9' })

describe('UpstashNormalizationMetrics within its Redis budget', () => {
  it('reads the totals and records when Redis answers just under the budget', async () => {
    const metrics = new UpstashNormalizationMetrics(slowRedis(() => BUDGET_MS - 1, fields), { timeoutMs: BUDGET_MS })
    expect(await settledAfter(BUDGET_MS - 1, metrics.totals())).toEqual({ value: { ios: { requests: 2, fixes: 9 } } })
    expect(await settledAfter(BUDGET_MS - 1, metrics.record('ios', 3))).toEqual({ value: undefined })
  })

  it('answers the totals with 503 and Retry-After, and gives up a count, once Redis is slower than the budget', async () => {
    const metrics = new UpstashNormalizationMetrics(slowRedis(() => BUDGET_MS + 1, fields), { timeoutMs: BUDGET_MS })
    expect(await settledAfter(BUDGET_MS, metrics.totals())).toMatchObject({ error: { status: 503, extra: { headers: { 'retry-after': '1' } } } })
    expect(await settledAfter(BUDGET_MS, metrics.record('ios', 3))).toMatchObject({ error: expect.any(Error) })
  })
})
