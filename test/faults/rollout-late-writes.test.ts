import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../edge/backend-client/catalog.ts'
import { DECISIONS, REQUEST_METRICS_HASH, field } from '../../edge/stores/tallies/tally.ts'
import { createController } from '../../edge/rollout/controller.ts'
import type { HistoryEntry } from '../../edge/stores/history/history-store.ts'
import { CachedRolloutStore } from '../../edge/stores/rollouts/cached.ts'
import { UpstashRolloutStore } from '../../edge/stores/rollouts/upstash.ts'
import { InProcessBackendStandIn } from '../../load/bench/edge/in-process-backend.ts'
import { creditRiskMetadata } from '../../load/bench/edge/workload.ts'
import { FakeMonitorSource, MINUTE, T0, canaryRollout } from '../edge/rollout/support.ts'
import { eventually, useLateRedis } from './support/late-redis.ts'

/**
 * Rollout changes against a real redis-server behind the Upstash adapter, through a proxy that
 * applies every command at once but holds the reply to the compare-and-set script: the change
 * lands after its writer gave up on the answer. It must be recorded once, and a resend of it
 * (the admin's retry, the controller's own) must be answered by its id, not refused or repeated.
 */

const TOKEN = 'rollout-late-writes-token'
const MODEL = 'credit-risk'
const PATH = `/v1/models/${MODEL}/rollout`
const REDIS_MS = 200
const redis = useLateRedis(TOKEN)
const admin = generateApiKey('test')
let app: ReturnType<typeof createApp>

/** The compare-and-set script's request: the only one that writes a rollout's revision. */
const isChange = (body: string) => body.includes("redis.call('HSET', KEYS[1], 'revision'")

const historyIn = async (model = MODEL): Promise<HistoryEntry[]> => (await redis.store.client.lrange<HistoryEntry>(`rollout-history:${model}`, 0, -1))
const revisionIn = async (): Promise<number> => Number((await redis.store.client.hget(`rollout:${MODEL}`, 'revision')) ?? 0)
const decisionsIn = async (action: string): Promise<number> => Number((await redis.store.client.hget(REQUEST_METRICS_HASH, field(DECISIONS, MODEL, action))) ?? 0)

beforeAll(async () => {
  const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
  app = createApp({
    parts: { keys: new MemoryKeyStore([{ name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 100_000 }]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }) },
    log: () => {},
  })
})

const env = () => ({ BACKEND_URL: 'in-process-stand-in', UPSTASH_REDIS_REST_URL: redis.late.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, REDIS_TIMEOUT_MS: String(REDIS_MS) })
const put = (body: unknown, ifMatch: string) =>
  app.request(PATH, { method: 'PUT', body: JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, 'if-match': ifMatch } }, env())

describe('a rollout PUT whose compare-and-set lands after its 503', () => {
  it('is recorded once with its change, and the retry with the same If-Match and body answers 200 with that revision', async () => {
    const body = { salt: 'exp', arms: [{ variant: 'stable', version: 2, weight: 90 }, { variant: 'b', version: 1, weight: 10 }] }
    redis.late.holdMs = (request) => (isChange(request) ? 3 * REDIS_MS : 0)
    const first = await put(body, '"r0"')
    expect(first.status).toBe(503)
    // Applied anyway, and with it its history entry and its count.
    expect(await eventually(revisionIn, 1)).toBe(1)
    expect((await historyIn()).map((e) => `${e.action} r${e.revision}`)).toEqual(['manual r1'])
    redis.late.holdMs = () => 0

    const retry = await put(body, '"r0"')
    expect(retry.status, await retry.clone().text()).toBe(200)
    expect(retry.headers.get('etag')).toBe('"r1"')
    expect(await retry.json()).toMatchObject({ revision: 1, rollout: { arms: [{ variant: 'stable', weight: 90 }, { variant: 'b', weight: 10 }] } })
    expect(await revisionIn()).toBe(1)
    expect(await historyIn()).toHaveLength(1)
    expect(await decisionsIn('manual')).toBe(1)

    // Another body against the old revision is another change: refused, as any stale PUT.
    expect((await put({ ...body, salt: 'other' }, '"r0"')).status).toBe(412)
    const listed = await app.request(`${PATH}/history`, { headers: { authorization: `Bearer ${admin}` } }, env())
    expect(((await listed.json()) as { entries: HistoryEntry[] }).entries.map((e) => e.revision)).toEqual([1])
  })
})

describe('a controller decision whose compare-and-set lands after its budget', () => {
  it('is resent with its id within the tick: applied, recorded, counted and notified once', async () => {
    await redis.store.client.hset(`rollout:${MODEL}`, { revision: 1, rollout: JSON.stringify(canaryRollout(1, { clean_streak: 2 })) })
    const notified: HistoryEntry[] = []
    let changes = 0
    // The first send of the decision: applied at once, its answer held past the budget.
    redis.late.holdMs = (request) => (isChange(request) && ++changes === 1 ? 3 * REDIS_MS : 0)
    const controller = createController({
      rollouts: new CachedRolloutStore(new UpstashRolloutStore(redis.viaProxy(), { timeoutMs: REDIS_MS }), { log: () => {} }),
      source: new FakeMonitorSource(),
      models: async () => [MODEL],
      now: () => T0 + 10 * MINUTE,
      notify: (entry) => void notified.push(entry),
      log: () => {},
    })
    const outcomes = await controller.tick()
    expect(outcomes).toMatchObject([{ model: MODEL, outcome: 'applied', revision: 2, decision: { action: 'step', from_weight: 1, to_weight: 5 } }])
    expect(changes).toBe(2)
    expect(await revisionIn()).toBe(2)
    const history = await historyIn()
    expect(history.map((e) => `${e.action} r${e.revision}`)).toEqual(['step r2'])
    expect(notified.map((e) => e.id)).toEqual([history[0].id])
    expect(await decisionsIn('step')).toBe(1)
  })
})
