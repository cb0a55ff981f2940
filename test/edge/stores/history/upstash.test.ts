import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HISTORY_CAP, type HistoryEntry } from '../../../../edge/stores/history/history-store.ts'
import { MemoryHistoryStore } from '../../../../edge/stores/history/memory.ts'
import { rolloutSchema } from '../../../../edge/rollout/rollout.ts'
import { MemoryRolloutStore } from '../../../../edge/stores/rollouts/memory.ts'
import { UpstashHistoryStore } from '../../../../edge/stores/history/upstash.ts'
import { UpstashRolloutStore } from '../../../../edge/stores/rollouts/upstash.ts'
import { startUpstashRedis, type UpstashRedis } from '../../../dev/support/upstash-redis.ts'

const TOKEN = 'history-store-test-token'
let upstash: UpstashRedis

const rollout = rolloutSchema.parse({ salt: 'exp', arms: [{ variant: 'stable', version: 1, weight: 100 }] })

const entry = (model: string, n: number): HistoryEntry => ({
  id: `${model}:${n}`,
  model,
  time: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString(),
  actor: 'controller',
  action: 'hold',
  variant: 'canary',
  from_weight: 1,
  to_weight: 1,
  reason: `reason ${n}`,
  revision: n,
})

/** The n-th change of `model`, from revision n - 1, with its entry. */
const change = (model: string, n: number) => [model, n - 1, rollout, { id: `${model}:${n}`, entry: entry(model, n) }] as const

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
})

afterAll(async () => {
  await upstash?.stop()
})

describe.each([
  ['on a real redis-server', () => ({ rollouts: new UpstashRolloutStore(upstash.client), history: new UpstashHistoryStore(upstash.client) })],
  ['in memory', () => {
    const history = new MemoryHistoryStore()
    return { rollouts: new MemoryRolloutStore({ history }), history }
  }],
])('the history rollout changes record, %s', (_name, create) => {
  it('lists newest first, per model, capped', async () => {
    const { rollouts, history } = create()
    const model = `m-${Math.random().toString(36).slice(2)}`
    for (let n = 1; n <= HISTORY_CAP + 2; n++) expect(await rollouts.compareAndSet(...change(model, n))).toBe(n)
    await rollouts.compareAndSet(...change(`${model}-other`, 1))
    const all = await history.list(model, HISTORY_CAP + 10)
    expect(all).toHaveLength(HISTORY_CAP)
    expect(all.at(-1)?.id).toBe(`${model}:3`)
    expect(await history.list(model, 2)).toEqual([entry(model, HISTORY_CAP + 2), entry(model, HISTORY_CAP + 1)])
    expect(await history.list('never-seen', 10)).toEqual([])
  })

  it('records a change once however often it is sent, and answers a resend with the revision it made', async () => {
    const { rollouts, history } = create()
    const model = `m-${Math.random().toString(36).slice(2)}`
    expect(await rollouts.compareAndSet(...change(model, 1))).toBe(1)
    expect(await rollouts.compareAndSet(...change(model, 2))).toBe(2)
    // Sent again after its revision moved on: the revision it made, nothing applied.
    expect(await rollouts.compareAndSet(...change(model, 1))).toBe(1)
    expect((await history.list(model, 10)).map((e) => e.id)).toEqual([`${model}:2`, `${model}:1`])
    // Another change from a stale revision is refused.
    expect(await rollouts.compareAndSet(model, 0, rollout, { id: `${model}:other`, entry: entry(model, 9) })).toBeUndefined()
  })
})

describe('UpstashHistoryStore with foreign list members', () => {
  it('leaves out what is not an entry instead of failing the whole history', async () => {
    const rollouts = new UpstashRolloutStore(upstash.client)
    await rollouts.compareAndSet(...change('mixed', 1))
    await upstash.client.lpush('rollout-history:mixed', '{"truncated": ', '"just a string"', JSON.stringify({ id: 'x' }))
    await rollouts.compareAndSet(...change('mixed', 2))
    expect((await new UpstashHistoryStore(upstash.client).list('mixed', 10)).map((e) => e.id)).toEqual(['mixed:2', 'mixed:1'])
  })
})
