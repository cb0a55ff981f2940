import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import type { Rollout } from '../../../edge/rollout/rollout.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { InProcessBackendStandIn } from '../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../load/bench/edge/workload.ts'

/** `POST …/rollout/pause` and `…/resume`: the canary kept, compare-and-set with If-Match, each recorded. */

const PATH = '/v1/models/credit-risk/rollout'
const admin = generateApiKey('test')
const history = new MemoryHistoryStore()
let app: ReturnType<typeof createApp>

beforeAll(async () => {
  const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
  app = createApp({
    parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts: new MemoryRolloutStore({ history }), history },
    log: () => {},
  })
})

const send = (method: 'GET' | 'PUT' | 'POST', path: string, headers: Record<string, string> = {}, body?: unknown) =>
  app.request(path, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers } })

const state = async () => {
  const res = await send('GET', PATH)
  return { etag: res.headers.get('etag')!, ...((await res.json()) as { revision: number; rollout: Rollout }) }
}

const running = { salt: 'exp', arms: [{ variant: 'stable', version: 2, weight: 95 }, { variant: 'canary', version: 1, weight: 5 }], canary: { variant: 'canary', baseline_variant: 'stable' } }

describe('pausing and resuming a canary', () => {
  it('is refused without a canary (400), without If-Match (428) and on a stale ETag (412), changing nothing', async () => {
    const plain = await state()
    const none = await send('POST', `${PATH}/pause`, { 'if-match': plain.etag })
    expect(none.status).toBe(400)
    expect(((await none.json()) as { detail: string }).detail).toBe('cannot pause: the rollout runs no canary')
    expect((await send('PUT', PATH, { 'if-match': plain.etag }, running)).status).toBe(200)
    expect((await send('POST', `${PATH}/pause`)).status).toBe(428)
    expect((await send('POST', `${PATH}/pause`, { 'if-match': plain.etag })).status).toBe(412)
    expect((await send('POST', `${PATH}/resume`, { 'if-match': (await state()).etag })).status).toBe(400)
    expect((await state()).rollout.canary).not.toHaveProperty('paused_at')
  })

  it('keeps the canary, its weight and streaks on pause; a PUT may not set paused_at; resume moves the step clock on by the paused time', async () => {
    const before = await state()
    const paused = await send('POST', `${PATH}/pause`, { 'if-match': before.etag })
    expect(paused.status, await paused.clone().text()).toBe(200)
    const after = await state()
    expect(paused.headers.get('etag')).toBe(after.etag)
    expect(after.revision).toBe(before.revision + 1)
    expect(after.rollout.arms).toEqual(before.rollout.arms)
    const { paused_at: pausedAt, ...kept } = after.rollout.canary!
    expect(kept).toEqual(before.rollout.canary)
    const [entry] = await history.list('credit-risk', 1)
    expect(entry).toMatchObject({ action: 'pause', actor: 'ops', variant: 'canary', from_weight: 5, to_weight: 5, revision: after.revision })
    expect(Date.parse(entry.time)).toBe(pausedAt)

    // Setting it by PUT is the controller's field; restating it (a read-modify-write) is not setting it.
    const set = await send('PUT', PATH, { 'if-match': after.etag }, { ...after.rollout, canary: { ...after.rollout.canary, paused_at: 5 } })
    expect(set.status).toBe(400)
    expect(((await set.json()) as { errors: Array<{ path: string }> }).errors.map((e) => e.path)).toEqual(['canary.paused_at'])

    const resumed = await send('POST', `${PATH}/resume`, { 'if-match': after.etag })
    expect(resumed.status).toBe(200)
    const [resumeEntry] = await history.list('credit-risk', 1)
    expect(resumeEntry).toMatchObject({ action: 'resume', revision: after.revision + 1 })
    expect((await state()).rollout.canary).toEqual({ ...before.rollout.canary, step_started_at: before.rollout.canary!.step_started_at + Date.parse(resumeEntry.time) - pausedAt! })
  })
})
