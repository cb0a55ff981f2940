import { describe, expect, it } from 'vitest'
import { redisCountStore } from '../../../../backend/monitor/drift/count-store.ts'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { createLogger } from '../../../../backend/logger.ts'
import { settledAfter, slowRedis, useFakeTimersPerTest } from '../../../faults/redis-slow.ts'
import { baseline, config } from './fixture.ts'

const BUDGET_MS = 100

useFakeTimersPerTest()

describe('DriftMonitor reads while Redis is slower than its budget', () => {
  it('fails every read that waited behind a timed-out call at once, and reads again afterwards', async () => {
    let delayMs = BUDGET_MS + 1
    const store = redisCountStore({ url: 'http://127.0.0.1:1', token: 't', timeoutMs: BUDGET_MS, client: slowRedis(() => delayMs, () => [[]]) })
    const counter = new DriftMonitor({ logger: createLogger('silent'), store }).counter(driftLayout('toy', 1, config, baseline))
    // A report reads several windows at once: one budget for all of them, not one each.
    const windows = await settledAfter(BUDGET_MS, Promise.allSettled([counter.window(15), counter.window(15), counter.window(15)]))
    expect(windows).toMatchObject({ value: [{ status: 'rejected' }, { status: 'rejected' }, { status: 'rejected' }] })
    delayMs = BUDGET_MS - 1
    expect(await settledAfter(BUDGET_MS - 1, counter.window(15))).toMatchObject({ value: { model: 'toy' } })
  })
})
