import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import type { HistoryEntry } from '../../../edge/stores/history/history-store.ts'
import type { Bindings } from '../../../edge/bindings.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import type { IsolateParts } from '../../../edge/isolate.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { createWorker } from '../../../edge/worker.ts'
import { InProcessBackendStandIn } from '../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../load/bench/edge/workload.ts'
import { freePort } from '../../support/ports.ts'
import { startReceiver, type Receiver } from './receiver.ts'
import { FakeMonitorSource, window } from './support.ts'

const PATH = 'http://edge.test/v1/models/credit-risk/rollout'
const admin = generateApiKey('test')
let receiver: Receiver
let standIn: InProcessBackendStandIn
let keys: MemoryKeyStore

beforeAll(async () => {
  receiver = await startReceiver()
  standIn = new InProcessBackendStandIn(await creditRiskMetadata())
  keys = new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }])
})

afterAll(async () => {
  await receiver?.close()
})

/** A worker whose services have their own rollout and history stores and, optionally, a monitor source. */
const workerWith = (monitorSource?: FakeMonitorSource) => {
  const history = new MemoryHistoryStore()
  const services = { transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts: new MemoryRolloutStore({ history }), history, ...(monitorSource ? { monitor: monitorSource } : {}) } satisfies IsolateParts
  const lines: string[] = []
  // Backoff without waiting, so a failing delivery settles within the test.
  const worker = createWorker({ parts: { keys, ...services }, log: () => {}, scheduledLog: (line) => void lines.push(line), webhook: { sleep: async () => {} } })
  const background: Promise<unknown>[] = []
  const ctx = { waitUntil: (p: Promise<unknown>) => void background.push(p), passThroughOnException: () => {}, props: {} }
  const request = (env: Bindings, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    worker.fetch(new Request(`${PATH}${path}`, { method, headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) }), env, ctx)
  const logged = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  return { worker, ctx, background, request, logged, services }
}

const startCanary = { salt: 'exp', arms: [{ variant: 'stable', version: 1, weight: 95 }, { variant: 'canary', version: 2, weight: 5 }], canary: { variant: 'canary', baseline_variant: 'stable' } }
// Each worker starts with no rollout stored: the PUT replaces revision 0.
const firstRevision = { 'if-match': '"r0"' }
const tick = { cron: '* * * * *', scheduledTime: Date.UTC(2026, 0, 1) }

describe('scheduled()', () => {
  it('skips the tick with a log line while no monitor source is configured (no backend, none given)', async () => {
    const { worker, ctx, logged } = workerWith()
    await worker.scheduled(tick, { BACKEND_URL: '' }, ctx)
    expect(logged()).toEqual([{ level: 'warn', msg: 'scheduled tick skipped: no monitor source configured', cron: '* * * * *', scheduled_time: tick.scheduledTime }])
  })

  it('drives the canary the admin API started, records the decision and posts it in the background', async () => {
    const env = { BACKEND_URL: 'in-process', ALERT_WEBHOOK_URL: receiver.url }
    const { worker, ctx, background, request, logged } = workerWith(new FakeMonitorSource((version) => window(version, { nan_outputs: version === 2 ? 3 : 0 })))
    expect((await request(env, 'PUT', '', startCanary, firstRevision)).status).toBe(200)
    await worker.scheduled(tick, env, ctx)
    expect(logged()).toContainEqual(expect.objectContaining({ msg: 'rollout controller', model: 'credit-risk', outcome: 'applied', action: 'rollback' }))
    expect(await Promise.all(background)).toEqual([true])
    const rollout = (await (await request(env, 'GET', '')).json()) as { rollout: { arms: Array<{ weight: number }>; canary?: unknown } }
    expect(rollout.rollout.arms.map((a) => a.weight)).toEqual([100, 0])
    expect(rollout.rollout.canary).toBeUndefined()
    const { entries } = (await (await request(env, 'GET', '/history')).json()) as { entries: HistoryEntry[] }
    expect(entries.map((e) => `${e.actor} ${e.action}`)).toEqual(['controller rollback', 'ops manual'])
    expect(receiver.bodies.at(-1)).toEqual(entries[0])
  })

  it('finishes the tick when the webhook cannot be reached; the delivery gives up on its own', async () => {
    const env = { BACKEND_URL: 'in-process', ALERT_WEBHOOK_URL: `http://127.0.0.1:${await freePort()}` }
    const { worker, ctx, background, request, services, logged } = workerWith(new FakeMonitorSource((version) => window(version, { nan_outputs: version === 2 ? 1 : 0 })))
    await request(env, 'PUT', '', startCanary, firstRevision)
    await expect(worker.scheduled(tick, env, ctx)).resolves.toBeUndefined()
    expect((await services.rollouts.get('credit-risk'))?.rollout.canary).toBeUndefined()
    expect(await Promise.all(background)).toEqual([false])
    expect(logged()).toContainEqual(expect.objectContaining({ msg: 'alert webhook failed', attempts: 4 }))
  })

  it('refuses to run on a bad CONTROLLER_* var, logging it, without throwing', async () => {
    const env = { BACKEND_URL: 'in-process', CONTROLLER_STEPS: '1,5' }
    const { worker, ctx, logged, request, services } = workerWith(new FakeMonitorSource((version) => window(version, { nan_outputs: 1 })))
    await request(env, 'PUT', '', startCanary, firstRevision)
    await worker.scheduled(tick, env, ctx)
    expect(logged()).toEqual([expect.objectContaining({ level: 'error', msg: 'scheduled tick failed', error: expect.stringContaining('CONTROLLER_STEPS') })])
    expect((await services.rollouts.get('credit-risk'))?.rollout.canary).toBeDefined()
  })
})
