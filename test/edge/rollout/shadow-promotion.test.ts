import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { createController } from '../../../edge/rollout/controller.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'
import { judgeShadow, shadowCountsOf, type ShadowPromotion } from '../../../edge/rollout/shadow-promotion.ts'
import { canaryFromShadow } from '../../../edge/rollout/transition.ts'
import type { HistoryEntry } from '../../../edge/stores/history/history-store.ts'
import { MemoryHistoryStore } from '../../../edge/stores/history/memory.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { RequestMetrics } from '../../../edge/stores/tallies/tally.ts'
import { InProcessBackendStandIn } from '../../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../../load/bench/edge/workload.ts'
import { FakeMonitorSource, MINUTE, T0 } from './support.ts'

const MODEL = 'credit-risk'
const PROMOTE = { min_rows: 100, min_agreement: 0.95, max_error_rate: 0.01, window_minutes: 10, canary_percent: 1 } as const

const withShadow = (promote: Partial<ShadowPromotion> | null = PROMOTE, arms = [{ variant: 'stable', version: 1, weight: 100 }]): Rollout =>
  rolloutSchema.parse({ salt: 'exp', arms, shadow: { version: 2, percent: 100, ...(promote ? { promote: { ...PROMOTE, ...promote } } : {}) } })

/** The edge's counts: `rows` compared rows of which `agreeing` agree, over `calls` shadow calls of which `errors` failed. */
const count = (metrics: RequestMetrics, { rows, agreeing, calls = 1, errors = 0 }: { rows: number; agreeing: number; calls?: number; errors?: number }) => {
  metrics.shadowCompared({ model: MODEL, servedVersion: 1, shadowVersion: 2, agreeing, diffs: new Array<number>(rows).fill(0.01) })
  for (let i = 0; i < calls; i++) metrics.request({ model: MODEL, version: '2', variant: 'shadow', code: i < errors ? 504 : 200, servedBy: i < errors ? 'edge' : 'backend', seconds: 0.01 })
}

const setup = async (rollout: Rollout, withCounts = true) => {
  const history = new MemoryHistoryStore()
  const rollouts = new MemoryRolloutStore({ history })
  await rollouts.compareAndSet(MODEL, 0, rollout)
  const metrics = new RequestMetrics()
  const notified: HistoryEntry[] = []
  const clock = { now: T0 }
  const controller = createController({
    rollouts,
    source: new FakeMonitorSource(),
    models: async () => [MODEL],
    now: () => clock.now,
    ...(withCounts ? { shadowCounts: async (model: string, version: number) => shadowCountsOf(await metrics.totals(), model, version) } : {}),
    notify: (entry) => void notified.push(entry),
    log: () => {},
  })
  const tickAt = (minute: number) => {
    clock.now = T0 + minute * MINUTE
    return controller.tick()
  }
  return { rollouts, history, metrics, notified, tickAt, stored: async () => (await rollouts.get(MODEL))!.rollout }
}

describe('the shadow rule', () => {
  it('starts a canary of an agreeing shadow at canary_percent, from the heaviest arm, recorded and notified', async () => {
    const { metrics, tickAt, stored, history, notified } = await setup(withShadow())
    count(metrics, { rows: 500, agreeing: 500, calls: 5 })
    // The first tick begins the window at the counts so far: what came before it is not judged.
    expect((await tickAt(0)).map((o) => o.outcome)).toEqual(['updated'])
    expect((await stored()).shadow?.promote?.window).toEqual({ started_at: T0, version: 2, at_start: { rows: 500, agreeing: 500, calls: 5, errors: 0 } })
    count(metrics, { rows: 99, agreeing: 99 })
    expect((await tickAt(1)).map((o) => o.outcome)).toEqual(['unchanged'])
    count(metrics, { rows: 101, agreeing: 97, calls: 100 })
    expect((await tickAt(2)).map((o) => o.outcome)).toEqual(['applied'])
    const rollout = await stored()
    expect(rollout.shadow).toBeUndefined()
    expect(rollout.arms).toEqual([{ variant: 'stable', version: 1, weight: 99 }, { variant: 'canary', version: 2, weight: 1 }])
    expect(rollout.canary).toMatchObject({ variant: 'canary', baseline_variant: 'stable', step_started_at: T0 + 2 * MINUTE, critical_streak: 0, clean_streak: 0 })
    expect(rollout.layout!.split('').filter((d) => d === '1')).toHaveLength(100)
    const [entry] = await history.list(MODEL, 10)
    expect(entry).toMatchObject({ actor: 'controller', action: 'start_canary', variant: 'canary', from_weight: 0, to_weight: 1 })
    expect(entry.reason).toBe('shadow v2 agreed on 98.00% of 200 rows, error rate 0.00% (0/101 calls) within 10 min: canary started at 1%')
    expect(notified).toEqual([entry])
  })

  it('does not start a disagreeing or failing shadow, and begins a new window when one is over', async () => {
    const { metrics, tickAt, stored, history } = await setup(withShadow())
    await tickAt(0)
    count(metrics, { rows: 200, agreeing: 180 })
    expect(await tickAt(1)).toMatchObject([{ outcome: 'unchanged', shadow: { action: 'wait', reason: expect.stringContaining('agreement below 95.00%') } }])
    // The window's 10 minutes are over: a new one starts at the counts now, the disagreement behind it.
    expect((await tickAt(10)).map((o) => o.outcome)).toEqual(['updated'])
    count(metrics, { rows: 200, agreeing: 200, calls: 50, errors: 1 })
    expect(await tickAt(11)).toMatchObject([{ outcome: 'unchanged', shadow: { action: 'wait', reason: expect.stringContaining('error rate above 1.00%') } }])
    expect((await stored()).canary).toBeUndefined()
    expect(await history.list(MODEL, 10)).toEqual([])
  })

  it('does nothing with the option off, or without the counts', async () => {
    for (const [rollout, withCounts] of [[withShadow(null), true], [withShadow(), false]] as const) {
      const { metrics, tickAt, stored } = await setup(rollout, withCounts)
      await tickAt(0)
      count(metrics, { rows: 1_000, agreeing: 1_000 })
      expect(await tickAt(1)).toEqual([])
      expect(await stored()).toEqual(rollout)
    }
  })

  it('judges only the window: counts that went back (another shadow, a flushed Redis) begin a new one', () => {
    const window = { started_at: T0, version: 2, at_start: { rows: 100, agreeing: 100, calls: 1, errors: 0 } }
    expect(judgeShadow({ ...PROMOTE, window }, 2, { rows: 50, agreeing: 50, calls: 1, errors: 0 }, T0 + MINUTE)).toEqual({ action: 'restart' })
    expect(judgeShadow({ ...PROMOTE, window }, 3, { rows: 500, agreeing: 500, calls: 1, errors: 0 }, T0 + MINUTE)).toEqual({ action: 'restart' })
    expect(judgeShadow({ ...PROMOTE, window }, 2, { rows: 200, agreeing: 196, calls: 2, errors: 0 }, T0 + MINUTE).action).toBe('start')
  })

  it('cannot start a canary where the heaviest arm has no room or already serves the shadow version', () => {
    expect(canaryFromShadow(withShadow({ canary_percent: 50 }, [{ variant: 'a', version: 1, weight: 50 }, { variant: 'b', version: 3, weight: 50 }]), T0)).toMatch(/not more than the canary's 50%/)
    expect(canaryFromShadow(withShadow({}, [{ variant: 'stable', version: 2, weight: 100 }]), T0)).toMatch(/already serves v2/)
    const taken = canaryFromShadow(withShadow({}, [{ variant: 'canary', version: 1, weight: 90 }, { variant: 'b', version: 3, weight: 10 }]), T0)
    expect(typeof taken !== 'string' && taken.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['canary:v1=89', 'b:v3=10', 'canary-v2:v2=1'])
  })
})

describe('PUT with shadow.promote', () => {
  const admin = generateApiKey('test')
  let app: ReturnType<typeof createApp>
  const rollouts = new MemoryRolloutStore()
  beforeAll(async () => {
    const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
    app = createApp({
      parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts },
      log: () => {},
    })
  })
  const path = `/v1/models/${MODEL}/rollout`
  const putRollout = async (rollout: unknown) =>
    app.request(path, {
      method: 'PUT',
      body: JSON.stringify(rollout),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, 'if-match': (await app.request(path, { headers: { authorization: `Bearer ${admin}` } })).headers.get('etag')! },
    })

  const put = (promote: Record<string, unknown>) => putRollout({ salt: 'exp', arms: [{ variant: 'stable', version: 1, weight: 100 }], shadow: { version: 2, percent: 100, promote } })

  it('refuses bad values with a 400 problem naming the field, and stores a good option', async () => {
    for (const [bad, field] of [
      [{ min_agreement: 1.5 }, 'min_agreement'],
      [{ max_error_rate: -0.1 }, 'max_error_rate'],
      [{ min_rows: 0 }, 'min_rows'],
      [{ window_minutes: 0 }, 'window_minutes'],
      [{ canary_percent: 100 }, 'canary_percent'],
      [{ canary_percent: 0.005 }, 'canary_percent'],
      [{ surprise: 1 }, 'promote'],
    ] as const) {
      const res = await put({ ...PROMOTE, ...bad })
      expect(res.status, JSON.stringify(bad)).toBe(400)
      expect(res.headers.get('content-type')).toContain('application/problem+json')
      expect(JSON.stringify(await res.json()), JSON.stringify(bad)).toContain(field)
    }
    const res = await put(PROMOTE)
    expect(res.status).toBe(200)
    expect(((await res.json()) as { rollout: Rollout }).rollout.shadow?.promote).toEqual(PROMOTE)
  })

  it('refuses a window a client sets, and takes back the stored one restated', async () => {
    const window = { started_at: T0, version: 2, at_start: { rows: 10, agreeing: 10, calls: 1, errors: 0 } }
    const forged = await put({ ...PROMOTE, window })
    expect(forged.status).toBe(400)
    expect(JSON.stringify(await forged.json())).toContain('shadow.promote.window')
    const stored = (await rollouts.get(MODEL))!
    await rollouts.compareAndSet(MODEL, stored.revision, { ...stored.rollout, shadow: { ...stored.rollout.shadow!, promote: { ...PROMOTE, window } } })
    const read = (await (await app.request(path, { headers: { authorization: `Bearer ${admin}` } })).json()) as { rollout: Rollout }
    expect((await putRollout(read.rollout)).status).toBe(200)
    const moved = { ...read.rollout, shadow: { ...read.rollout.shadow!, promote: { ...PROMOTE, window: { ...window, started_at: T0 - MINUTE } } } }
    expect((await putRollout(moved)).status).toBe(400)
  })
})
