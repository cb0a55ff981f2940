import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryHistoryStore, type HistoryEntry } from '../../../edge/rollout/history-store.ts'
import { UpstashHistoryStore } from '../../../edge/rollout/upstash-history-store.ts'
import { startUpstashRedis, type UpstashRedis } from '../../infra/support/upstash-redis.ts'

const TOKEN = 'history-store-test-token'
let upstash: UpstashRedis

const entry = (model: string, n: number): HistoryEntry => ({
  id: `id-${n}`,
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

beforeAll(async () => {
  upstash = await startUpstashRedis({ token: TOKEN })
})

afterAll(async () => {
  await upstash?.stop()
})

describe.each([
  ['UpstashHistoryStore on a real redis-server', () => new UpstashHistoryStore(upstash.client, 5)],
  ['MemoryHistoryStore', () => new MemoryHistoryStore(5)],
])('%s', (_name, create) => {
  it('lists newest first, per model, capped', async () => {
    const store = create()
    const model = `m-${Math.random().toString(36).slice(2)}`
    for (let n = 1; n <= 7; n++) await store.append(entry(model, n))
    await store.append(entry(`${model}-other`, 99))
    expect((await store.list(model, 100)).map((e) => e.id)).toEqual(['id-7', 'id-6', 'id-5', 'id-4', 'id-3'])
    expect(await store.list(model, 2)).toEqual([entry(model, 7), entry(model, 6)])
    expect(await store.list('never-seen', 10)).toEqual([])
  })
})

describe('UpstashHistoryStore with foreign list members', () => {
  it('leaves out what is not an entry instead of failing the whole history', async () => {
    const store = new UpstashHistoryStore(upstash.client, 10)
    await store.append(entry('mixed', 1))
    await upstash.client.lpush('rollout-history:mixed', '{"truncated": ', '"just a string"', JSON.stringify({ id: 'x' }))
    await store.append(entry('mixed', 2))
    expect((await store.list('mixed', 10)).map((e) => e.id)).toEqual(['id-2', 'id-1'])
  })
})
