import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createController } from '../../../edge/rollout/controller.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { createWebhook } from '../../../edge/rollout/webhook.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { freePort } from '../../support/ports.ts'
import { startReceiver, type Receiver } from './receiver.ts'
import { FakeMonitorSource, MINUTE, T0, canaryRollout, window } from './support.ts'

let receiver: Receiver
const lines: string[] = []
const delays: number[] = []
/** Backoff without waiting: the test records the delays asked for instead. */
const sleep = async (ms: number) => void delays.push(ms)

beforeEach(async () => {
  receiver = await startReceiver()
  lines.length = 0
  delays.length = 0
})

afterEach(async () => {
  receiver.release()
  await receiver.close()
})

const controllerPostingTo = async (url: string, deliveries: Promise<boolean>[]) => {
  const history = new MemoryHistoryStore()
  const rollouts = new MemoryRolloutStore({ history })
  await rollouts.compareAndSet('credit-risk', 0, canaryRollout(1))
  const webhook = createWebhook({ url, sleep, log: (l) => void lines.push(l) })
  const clock = { now: T0 }
  const controller = createController({
    rollouts,
    source: new FakeMonitorSource((version) => window(version, { nan_outputs: clock.now >= T0 + 2 * MINUTE && version === 3 ? 1 : 0 })),
    models: async () => ['credit-risk'],
    now: () => clock.now,
    notify: (entry) => void deliveries.push(webhook(entry)),
    log: () => {},
  })
  return { controller, history, clock }
}

describe('alert webhook', () => {
  it('posts each recorded decision as JSON to a real receiver', async () => {
    const deliveries: Promise<boolean>[] = []
    const { controller, history, clock } = await controllerPostingTo(receiver.url, deliveries)
    for (const minute of [1, 2]) {
      clock.now = T0 + minute * MINUTE
      await controller.tick()
    }
    expect(await Promise.all(deliveries)).toEqual([true, true])
    const entries = await history.list('credit-risk', 10)
    expect(receiver.bodies).toEqual([...entries].reverse())
    expect(receiver.bodies).toMatchObject([{ action: 'hold', model: 'credit-risk' }, { action: 'rollback', to_weight: 0, numbers: { canary: { nan_outputs: 1 } } }])
  })

  it('does not hold up the tick while the receiver hangs', async () => {
    receiver.hold()
    const deliveries: Promise<boolean>[] = []
    const { controller, clock } = await controllerPostingTo(receiver.url, deliveries)
    clock.now = T0 + 2 * MINUTE
    let settled = false
    const outcomes = await controller.tick()
    deliveries.forEach((d) => void d.then(() => (settled = true)))
    expect(outcomes).toMatchObject([{ outcome: 'applied', decision: { action: 'rollback' } }])
    expect(settled).toBe(false)
    await expect.poll(() => receiver.bodies.length).toBe(1)
    receiver.release()
    expect(await Promise.all(deliveries)).toEqual([true])
  })

  it('retries 5xx with doubling backoff, then gives up with a log line and no throw', async () => {
    receiver.status = 503
    const post = createWebhook({ url: `${receiver.url}/hook?token=secret-token`, sleep, log: (l) => void lines.push(l) })
    expect(await post({ n: 1 })).toBe(false)
    expect(receiver.bodies).toEqual([{ n: 1 }, { n: 1 }, { n: 1 }, { n: 1 }])
    expect(delays).toEqual([500, 1_000, 2_000])
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0])).toEqual({ level: 'warn', msg: 'alert webhook failed', attempts: 4, error: 'HTTP 503' })
    expect(lines[0]).not.toContain('secret-token')
  })

  it('delivers on a retry once the receiver recovers', async () => {
    receiver.status = 500
    const post = createWebhook({ url: receiver.url, sleep: async () => void (receiver.status = 200) })
    expect(await post({ n: 2 })).toBe(true)
    expect(receiver.bodies).toHaveLength(2)
  })

  it('does not retry a payload the receiver refuses', async () => {
    receiver.status = 400
    expect(await createWebhook({ url: receiver.url, sleep, log: () => {} })({ n: 3 })).toBe(false)
    expect(receiver.bodies).toHaveLength(1)
  })

  it('resolves false, never rejects, when nothing listens or the receiver hangs past the timeout', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`
    expect(await createWebhook({ url: closed, sleep, log: (l) => void lines.push(l) })({ n: 4 })).toBe(false)
    expect(JSON.parse(lines[0])).toMatchObject({ attempts: 4 })
    receiver.hold()
    expect(await createWebhook({ url: receiver.url, attempts: 1, timeoutMs: 50, log: () => {} })({ n: 5 })).toBe(false)
  })
})
