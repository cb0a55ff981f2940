import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { applyOnce, OutgoingWrite, WriteInDoubt } from '../../shared/write-once.ts'
import { createUpstashClient } from '../../shared/upstash-client.ts'
import { startUpstashRedis, type UpstashRedis } from '../dev/support/upstash-redis.ts'
import { until } from '../backend/support/backend-process.ts'
import { startLateReplies, type LateReplies } from '../faults/support/late-replies.ts'

const TOKEN = 'write-once-token'

describe('applyOnce against real Redis, replies held past the budget', () => {
  let store: UpstashRedis
  let late: LateReplies

  beforeAll(async () => {
    store = await startUpstashRedis({ token: TOKEN })
    late = await startLateReplies(store.adapter.url)
  })
  afterAll(async () => {
    await late.close()
    await store.stop()
  })

  it('a write that timed out but landed is not applied again when resent with its id', async () => {
    const redis = createUpstashClient({ url: late.url, token: TOKEN })
    late.holdMs = () => 300
    const commands = [['HINCRBY', 'h:once', 'f', '5']]
    await expect(applyOnce(redis, 'w1', commands, { timeoutMs: 50 })).rejects.toBeInstanceOf(WriteInDoubt)
    late.holdMs = () => 0
    // the first attempt lands (its reply is what is held)
    await until(async () => (await store.client.hget('h:once', 'f')) === 5)
    expect(await applyOnce(redis, 'w1', commands, { timeoutMs: 10_000 })).toBe(false)
    expect(await store.client.hget('h:once', 'f')).toBe(5)
    // another id is another write
    expect(await applyOnce(redis, 'w2', commands, { timeoutMs: 10_000 })).toBe(true)
    expect(await store.client.hget('h:once', 'f')).toBe(10)
  })

  it('applies every command of one write, or none when one is refused', async () => {
    const redis = createUpstashClient({ url: store.adapter.url, token: TOKEN })
    await store.client.set('s:string', 'x')
    expect(await applyOnce(redis, 'w3', [['HINCRBY', 'h:both', 'a', '1'], ['EXPIRE', 'h:both', '60']], { timeoutMs: 10_000 })).toBe(true)
    expect(await store.client.hget('h:both', 'a')).toBe(1)
    expect(await store.client.ttl('h:both')).toBeGreaterThan(0)
    await expect(applyOnce(redis, 'w4', [['HINCRBY', 's:string', 'a', '1']], { timeoutMs: 10_000 })).rejects.toThrow(/WRONGTYPE/)
    // refused means not applied: the id was not kept, so the write is not taken for done
    expect(await store.client.exists('once:w4')).toBe(0)
  })
})

describe('OutgoingWrite', () => {
  it('hands the write in doubt back with the same id and payload until it is settled', () => {
    const out = new OutgoingWrite<number[]>('t')
    let taken = 0
    const first = out.next(() => [++taken])!
    expect(first.payload).toEqual([1])
    expect(out.next(() => [++taken])).toEqual(first)
    expect(out.inDoubt).toBe(true)
    out.settled()
    const second = out.next(() => [++taken])!
    expect(second.payload).toEqual([2])
    expect(second.id).not.toBe(first.id)
    out.settled()
    expect(out.next(() => undefined)).toBeUndefined()
    expect(out.inDoubt).toBe(false)
  })
  it('sendWith resends the write in doubt, then sends what was taken since in the same call', async () => {
    const out = new OutgoingWrite<string>('t')
    const sent: Array<[string, string]> = []
    let refuse = true
    const send = async (id: string, payload: string) => {
      sent.push([id, payload])
      if (refuse) throw new Error('no answer')
    }
    await expect(out.sendWith(() => 'first', send)).rejects.toThrow('no answer')
    refuse = false
    await out.sendWith(() => 'second', send)
    expect(sent.map(([, payload]) => payload)).toEqual(['first', 'first', 'second'])
    expect(sent[1][0]).toBe(sent[0][0])
    expect(sent[2][0]).not.toBe(sent[0][0])
    expect(out.inDoubt).toBe(false)
    // Nothing in doubt: one write per call.
    await out.sendWith(() => 'third', send)
    expect(sent).toHaveLength(4)
  })
})
