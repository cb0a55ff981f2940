import { describe, expect, it, vi } from 'vitest'
import { redisCountStore, type CountStore, type HashIncrements } from '../../../../backend/monitor/drift/count-store.ts'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { createLogger } from '../../../../backend/logger.ts'
import { settledAfter, slowRedis, useFakeTimersPerTest } from '../../../faults/redis-slow.ts'
import { inDoubtAfter } from '../../../../shared/write-once.ts'
import { baseline, config, request, row } from './fixture.ts'

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

/**
 * A store keeping the write-id contract in memory: each id applies once. Its first write lands
 * `firstLandsAfterMs` after it was sent, past the budget; the others at once.
 */
const lateFirstWrite = (budgetMs: number, firstLandsAfterMs: number) => {
  const applied = new Set<string>()
  const hashes = new Map<string, Map<number, number>>()
  const sent: string[] = []
  const land = (id: string, increments: readonly HashIncrements[]) => {
    if (applied.has(id)) return
    applied.add(id)
    for (const { key, indices, deltas } of increments) {
      const hash = hashes.get(key) ?? new Map<number, number>()
      indices.forEach((index, k) => hash.set(index, (hash.get(index) ?? 0) + deltas[k]))
      hashes.set(key, hash)
    }
  }
  const store: CountStore = {
    apply(id, increments) {
      const delay = sent.length === 0 ? firstLandsAfterMs : 0
      sent.push(id)
      return inDoubtAfter(id, budgetMs, new Promise<void>((resolve) => setTimeout(() => resolve(land(id, increments)), delay)))
    },
    read: (keys) => Promise.resolve(keys.map((key) => new Map(hashes.get(key)))),
  }
  return { store, sent }
}

describe('DriftMonitor flushes that land after their budget', () => {
  it('resends the flush in doubt with its id and counts rows recorded meanwhile once: 10 + 4 rows recorded, 14 counted', async () => {
    const { store, sent } = lateFirstWrite(50, 150)
    const layout = driftLayout('toy', 1, config, baseline)
    const counter = new DriftMonitor({ logger: createLogger('silent'), store }).counter(layout)
    const record = (n: number) => {
      const { inputs, outputs } = request(Array.from({ length: n }, () => row(1, 0, 1)), Array.from({ length: n }, () => 0.9))
      counter.record(inputs, n, outputs)
    }
    record(10)
    // A view flushes first: this flush is in doubt at 50 ms and lands at 150 ms.
    expect(await settledAfter(50, counter.window(5))).toMatchObject({ error: { name: 'WriteInDoubt' } })
    record(4)
    expect(await settledAfter(1, counter.window(5))).toMatchObject({ value: { rows: 14 } })
    await vi.advanceTimersByTimeAsync(150)
    const others = new DriftMonitor({ logger: createLogger('silent'), store }).counter(layout)
    expect((await others.window(5)).rows).toBe(14)
    // The resend carried the first flush's id; the 4 later rows went as a write of their own.
    expect(sent).toHaveLength(3)
    expect(sent[1]).toBe(sent[0])
    expect(sent[2]).not.toBe(sent[0])
  })
})
