import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { createController } from '../../../edge/rollout/controller.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { type HistoryEntry } from '../../../edge/stores/history/history-store.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { InProcessBackendStandIn } from '../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../load/bench/edge/workload.ts'
import { FakeMonitorSource, window } from '../rollout/support.ts'

const PATH = '/v1/models/credit-risk/rollout'
const env = { BACKEND_URL: 'in-process-stand-in' }
const keys = { predict: generateApiKey('test'), admin: generateApiKey('test') }
const history = new MemoryHistoryStore()
const rollouts = new MemoryRolloutStore({ history })
let app: ReturnType<typeof createApp>

const call = (method: string, path: string, key?: string, body?: unknown, headers: Record<string, string> = {}) =>
  app.request(path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
  }, env)

/** A PUT replacing the revision stored now. */
const put = async (body: unknown) => call('PUT', PATH, keys.admin, body, { 'if-match': (await call('GET', PATH, keys.admin)).headers.get('etag')! })

const entries = async (query = '') => ((await (await call('GET', `${PATH}/history${query}`, keys.admin)).json()) as { entries: HistoryEntry[] }).entries

beforeAll(async () => {
  // The backend's metadata for credit-risk (versions 1 and 2) without a backend process.
  const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
  app = createApp({
    parts: { keys: new MemoryKeyStore([
      { name: 'web', hash: await hashApiKey(keys.predict), scopes: ['predict'], rate_limit_per_minute: 100_000 },
      { name: 'ops', hash: await hashApiKey(keys.admin), scopes: ['predict', 'admin'], rate_limit_per_minute: 100_000 },
    ]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts, history },
    log: () => {},
  })
})

const canaryStart = {
  salt: 'exp',
  arms: [{ variant: 'stable', version: 1, weight: 99 }, { variant: 'canary', version: 2, weight: 1 }],
  canary: { variant: 'canary', baseline_variant: 'stable' },
}

describe('starting a canary through the rollout API', () => {
  it('accepts a canary at weight 1, starting its step now with empty streaks', async () => {
    const before = Date.now()
    const res = await put(canaryStart)
    expect(res.status).toBe(200)
    const { rollout } = (await res.json()) as { rollout: { canary: { step_started_at: number } } }
    expect(rollout.canary).toMatchObject({ variant: 'canary', baseline_variant: 'stable', critical_streak: 0, clean_streak: 0 })
    expect(rollout.canary.step_started_at).toBeGreaterThanOrEqual(before)
  })

  it('refuses a canary naming an arm that does not exist, with the field', async () => {
    const res = await put({ ...canaryStart, canary: { variant: 'canary', baseline_variant: 'stabel' } })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ errors: [{ path: 'canary.baseline_variant', message: 'no arm is named "stabel"' }] })
  })
})

describe('GET /v1/models/{model}/rollout/history', () => {
  it('needs an admin key', async () => {
    expect((await call('GET', `${PATH}/history`)).status).toBe(401)
    expect((await call('GET', `${PATH}/history`, keys.predict)).status).toBe(403)
  })

  it('lists manual changes and controller decisions newest first, with who, what, why and when', async () => {
    const controller = createController({ rollouts, source: new FakeMonitorSource((version) => window(version, { nan_outputs: version === 2 ? 1 : 0 })), models: async () => ['credit-risk'], log: () => {} })
    expect(await controller.tick()).toMatchObject([{ outcome: 'applied', decision: { action: 'rollback' } }])
    expect((await put({ salt: 'exp', arms: [{ variant: 'stable', version: 2, weight: 100 }] })).status).toBe(200)

    const listed = await entries()
    expect(listed.map((e) => [e.actor, e.action, e.from_weight, e.to_weight, e.reason])).toEqual([
      ['ops', 'manual', null, null, 'rollout replaced by PUT'],
      ['controller', 'rollback', 1, 0, 'canary produced 1 NaN/Inf outputs'],
      ['ops', 'manual', null, 1, 'canary "canary" started by PUT'],
    ])
    expect(listed[1].numbers).toMatchObject({ canary: { version: 2, nan_outputs: 1 }, stable: { version: 1 } })
    expect(listed.map((e) => e.revision)).toEqual([3, 2, 1])
    expect(Date.parse(listed[0].time)).toBeGreaterThanOrEqual(Date.parse(listed[2].time))
    expect(await entries('?limit=1')).toEqual(listed.slice(0, 1))
  })

  it('refuses a limit outside 1 to 500', async () => {
    expect((await call('GET', `${PATH}/history?limit=0`, keys.admin)).status).toBe(400)
    expect((await call('GET', `${PATH}/history?limit=501`, keys.admin)).status).toBe(400)
    expect((await call('GET', `${PATH}/history?limit=ten`, keys.admin)).status).toBe(400)
  })
})
