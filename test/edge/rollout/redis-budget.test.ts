import { describe, expect, it } from 'vitest'
import { DECISION_SENDS, createController } from '../../../edge/rollout/controller.ts'
import type { HistoryEntry } from '../../../edge/stores/history/history-store.ts'
import { UpstashHistoryStore } from '../../../edge/stores/history/upstash.ts'
import { rolloutSchema } from '../../../edge/rollout/rollout.ts'
import { CachedRolloutStore } from '../../../edge/stores/rollouts/cached.ts'
import { UpstashRolloutStore } from '../../../edge/stores/rollouts/upstash.ts'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS } from '../../../shared/upstash-client.ts'
import { settingsFrom } from '../../../edge/bindings.ts'
import { canaryRollout, FakeMonitorSource, MINUTE, T0 } from './support.ts'
import { settledAfter, slowRedis, useFakeTimersPerTest } from '../../faults/redis-slow.ts'

const BUDGET_MS = 100

const rollout = rolloutSchema.parse({ salt: 'exp', arms: [{ variant: 'stable', version: 2, weight: 95 }, { variant: 'canary', version: 3, weight: 5 }] })
const stored = (command: string) => (command === 'hgetall' ? { revision: '4', rollout: JSON.stringify(rollout) } : 5)

const entry: HistoryEntry = { id: 'e-1', model: 'm', time: '2026-12-01T00:00:00.000Z', actor: 'controller', action: 'step', variant: 'canary', from_weight: 1, to_weight: 5, reason: 'healthy', revision: 5 }

useFakeTimersPerTest()

describe('UpstashRolloutStore within its Redis budget', () => {
  it('reads and writes when Redis answers just under the budget', async () => {
    const store = new UpstashRolloutStore(slowRedis(() => BUDGET_MS - 1, stored), { timeoutMs: BUDGET_MS })
    expect(await settledAfter(BUDGET_MS - 1, store.get('m'))).toEqual({ value: { rollout, revision: 4 } })
    expect(await settledAfter(BUDGET_MS - 1, store.compareAndSet('m', 4, rollout))).toEqual({ value: 5 })
  })

  it('fails a read and a compare-and-set with 503 once Redis is slower than the budget', async () => {
    const store = new UpstashRolloutStore(slowRedis(() => BUDGET_MS + 1, stored), { timeoutMs: BUDGET_MS })
    expect(await settledAfter(BUDGET_MS, store.get('m'))).toMatchObject({ error: { status: 503 } })
    expect(await settledAfter(BUDGET_MS, store.compareAndSet('m', 4, rollout))).toMatchObject({ error: { status: 503 } })
  })
})

describe('CachedRolloutStore when its store does not answer in time', () => {
  it('serves the last known rollout, or none (the default routing), and logs once per spell', async () => {
    let now = 0
    let delayMs = 0
    const lines: string[] = []
    const shared = new UpstashRolloutStore(slowRedis(() => delayMs, stored), { timeoutMs: BUDGET_MS })
    const cache = new CachedRolloutStore(shared, { ttlMs: 1_000, now: () => now, log: (line) => lines.push(line) })
    expect(await settledAfter(0, cache.get('m'))).toEqual({ value: { rollout, revision: 4 } })
    delayMs = BUDGET_MS + 1
    now = 1_000
    expect(await settledAfter(BUDGET_MS, cache.get('m'))).toEqual({ value: { rollout, revision: 4 } })
    expect(await settledAfter(BUDGET_MS, cache.get('never-read'))).toEqual({ value: undefined })
    now = 2_000
    expect(await settledAfter(BUDGET_MS, cache.get('m'))).toEqual({ value: { rollout, revision: 4 } })
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', model: 'm', error: `no answer from Redis within ${BUDGET_MS} ms` })
    delayMs = 0
    now = 3_000
    expect(await settledAfter(0, cache.get('m'))).toEqual({ value: { rollout, revision: 4 } })
    expect(lines).toHaveLength(2)
    expect(JSON.parse(lines[1]!)).toMatchObject({ level: 'info' })
  })

  it('still fails a writer\'s fresh read, so nothing is derived from a stale revision', async () => {
    const cache = new CachedRolloutStore(new UpstashRolloutStore(slowRedis(() => BUDGET_MS + 1, stored), { timeoutMs: BUDGET_MS }), { log: () => {} })
    expect(await settledAfter(BUDGET_MS, cache.get('m', { fresh: true }))).toMatchObject({ error: { status: 503 } })
  })
})

describe('UpstashHistoryStore within its Redis budget', () => {
  it('lists when Redis answers just under the budget', async () => {
    const store = new UpstashHistoryStore(slowRedis(() => BUDGET_MS - 1, () => [JSON.stringify(entry)]), { timeoutMs: BUDGET_MS })
    expect(await settledAfter(BUDGET_MS - 1, store.list('m', 10))).toEqual({ value: [entry] })
  })

  it('answers a list with 503 and Retry-After once Redis is slower than the budget', async () => {
    const store = new UpstashHistoryStore(slowRedis(() => BUDGET_MS + 1, () => [JSON.stringify(entry)]), { timeoutMs: BUDGET_MS })
    expect(await settledAfter(BUDGET_MS, store.list('m', 10))).toMatchObject({ error: { status: 503, extra: { headers: { 'retry-after': '1' } } } })
  })
})

describe('REDIS_TIMEOUT_MS', () => {
  it('is read as a positive number of milliseconds, else the default of 200 ms', () => {
    expect(DEFAULT_EDGE_REDIS_TIMEOUT_MS).toBe(200)
    expect(settingsFrom({}).redisTimeoutMs).toBe(200)
    expect(settingsFrom({ REDIS_TIMEOUT_MS: ' 40 ' }).redisTimeoutMs).toBe(40)
    for (const bad of ['', '0', '-5', 'abc', 'Infinity']) expect(settingsFrom({ REDIS_TIMEOUT_MS: bad }).redisTimeoutMs, bad).toBe(200)
  })
})

describe('the controller tick when Redis does not answer in time', () => {
  it('ends within its sends\' budgets with the model failed, instead of hanging on its write', async () => {
    let delayMs = 0
    const canary = canaryRollout(5)
    const redis = slowRedis(() => delayMs, (command) => (command === 'hgetall' ? { revision: '1', rollout: JSON.stringify(canary) } : 2))
    const rollouts = new CachedRolloutStore(new UpstashRolloutStore(redis, { timeoutMs: BUDGET_MS }), { ttlMs: 60 * MINUTE, log: () => {} })
    expect(await settledAfter(0, rollouts.get('credit-risk'))).toMatchObject({ value: { revision: 1 } })
    delayMs = BUDGET_MS + 1
    const controller = createController({
      rollouts,
      source: new FakeMonitorSource(),
      models: async () => ['credit-risk'],
      now: () => T0 + 30 * MINUTE,
      log: () => {},
    })
    // Each send of the decision waits its budget; the sends are bounded.
    expect(await settledAfter(DECISION_SENDS * BUDGET_MS, controller.tick())).toMatchObject({ value: [{ model: 'credit-risk', outcome: 'failed' }] })
  })
})
