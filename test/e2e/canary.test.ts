import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HistoryEntry } from '../../edge/stores/history/history-store.ts'
import type { Rollout } from '../../edge/rollout/rollout.ts'
import type { Applicant } from '../../tools/training/applicants.ts'
import { startReceiver, type Receiver } from '../edge/rollout/receiver.ts'
import { createCanaryRepository } from '../../dev/canary-repository.ts'
import { ROWS_PER_REQUEST, canaryRollout, sendPinnedTraffic } from '../../dev/canary-traffic.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient, replaceRollout, type Schemas } from '../support/client.ts'
import { ROLLOUT_KEYS, STEP_EVERY_TICK, startStack, type Stack } from '../support/stack.ts'

/**
 * The rollout controller end to end: the bundled worker in real workerd (its scheduled handler
 * fired as a Cron Trigger would), the real backend counting drift into a real redis-server through
 * the Upstash adapter, and a real webhook receiver. Traffic is synthetic applicants through the
 * edge, pinned to each arm's version so both arms see the same inputs. Scenarios run in order,
 * each on versions no earlier scenario sent traffic to.
 */

const TOKEN = 'canary-e2e-test-token-0123456789'
const MODEL = 'credit-risk'

let repository: Awaited<ReturnType<typeof createCanaryRepository>>
let stack: Stack
let receiver: Receiver
let worker: RunningWorker
let client = ''
let admin = ''
let seed = 50_000

const edge = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${worker.url}${path}`, { ...init, headers: { 'x-api-key': init.key ?? admin, 'content-type': 'application/json', ...init.headers } })

/** `rows` applicants from the training distribution (edited) sent to `version` through the edge. */
const traffic = (version: number, rows: number, edit?: (a: Applicant) => Applicant): Promise<Map<number, number>> =>
  sendPinnedTraffic({ edgeUrl: worker.url, key: client, model: MODEL, version, rows, seed: seed++, ...(edit ? { edit } : {}) })

const putRollout = async (rollout: Schemas['RolloutPut']) => {
  const res = await replaceRollout(edgeClient(worker.url, { key: admin }), rollout, MODEL)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}

const rollout = async (): Promise<Rollout> => ((await (await edge(`/v1/models/${MODEL}/rollout`)).json()) as { rollout: Rollout }).rollout
const history = async (): Promise<HistoryEntry[]> => ((await (await edge(`/v1/models/${MODEL}/rollout/history`)).json()) as { entries: HistoryEntry[] }).entries

/** Fires the worker's scheduled handler as the minute's Cron Trigger does. */
const tick = async () => {
  const fetcher = await worker.mf.getWorker()
  const result = await fetcher.scheduled({ cron: '* * * * *', scheduledTime: new Date() })
  expect(result.outcome).toBe('ok')
}

const weights = async () => (await rollout()).arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)

beforeAll(async () => {
  // 1 and 2: the same network; 3 emits NaN; 4 scores everyone 1.5 logits riskier; 5 and 6 the same network again.
  repository = await createCanaryRepository({ 1: 'same', 2: 'same', 3: 'nan', 4: { shiftLogit: 1.5 }, 5: 'same', 6: 'same' })
  receiver = await startReceiver()
  stack = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000 },
    backend: { MODEL_REPOSITORY: repository.root, DRIFT_FLUSH_MS: '500' },
    keys: ROLLOUT_KEYS,
    worker: {
      MAX_INSTANCES: String(ROWS_PER_REQUEST),
      ALERT_WEBHOOK_URL: receiver.url,
      // The test steps on every tick; the rest as deployed.
      ...STEP_EVERY_TICK,
      // Both arms share two busy cores with the test: a p95 hold would be the machine's, not the
      // canary's (the p95 rule is pinned by the policy's own tests).
      CONTROLLER_P95_SLACK_MS: '1000',
    },
  })
  worker = stack.worker
  client = stack.keys.app!
  admin = stack.keys.ops!
})

afterAll(async () => {
  await stack?.stop()
  await receiver?.close()
  await repository?.remove()
})

describe('the rollout controller in workerd, on the backend\'s drift counts in Redis', () => {
  it('steps a healthy canary 1 → 5 → 20 → 50 under steady traffic and promotes it', async () => {
    await putRollout(canaryRollout(1, 2))
    const seen: string[][] = [await weights()]
    for (let i = 0; i < 8 && (await rollout()).canary; i++) {
      await traffic(1, 1_100)
      await traffic(2, 1_100)
      await tick()
      seen.push(await weights())
    }
    expect(seen).toEqual([
      ['stable:v1=99', 'canary:v2=1'],
      ['stable:v1=95', 'canary:v2=5'],
      ['stable:v1=80', 'canary:v2=20'],
      ['stable:v1=50', 'canary:v2=50'],
      ['stable:v2=100'],
    ])
    const decisions = (await history()).filter((e) => e.actor === 'controller').map((e) => `${e.action} ${e.from_weight}→${e.to_weight}`)
    expect(decisions).toEqual(['promote 50→100', 'step 20→50', 'step 5→20', 'step 1→5'])
  })

  it('rolls a canary that emits NaN back on the first tick after it is seen', async () => {
    await putRollout(canaryRollout(2, 3))
    await traffic(2, 1_100)
    // The edge refuses non-finite outputs (502); the backend counted them.
    expect([...(await traffic(3, 256)).keys()]).toEqual([502])
    await tick()
    expect(await weights()).toEqual(['stable:v2=100', 'canary:v3=0'])
    const [decision] = await history()
    expect(decision).toMatchObject({ actor: 'controller', action: 'rollback', from_weight: 1, to_weight: 0 })
    expect(decision.reason).toMatch(/NaN|non-finite/i)
  })

  it('rolls back a canary whose predictions shifted after 3 critical windows, not before', async () => {
    await putRollout(canaryRollout(2, 4))
    const after: string[][] = []
    for (let i = 0; i < 3; i++) {
      await traffic(2, 1_100)
      await traffic(4, 1_100)
      await tick()
      after.push(await weights())
    }
    expect(after).toEqual([
      ['stable:v2=99', 'canary:v4=1'],
      ['stable:v2=99', 'canary:v4=1'],
      ['stable:v2=100', 'canary:v4=0'],
    ])
    const [decision] = await history()
    expect(decision).toMatchObject({ action: 'rollback', from_weight: 1, to_weight: 0 })
    expect(decision.numbers!.psi).toBeGreaterThan(decision.numbers!.psi_critical)
  })

  it('alerts on input drift both arms see, and leaves the weights alone', async () => {
    await putRollout(canaryRollout(5, 6))
    // Everyone's debt ratio (an important feature) up by 0.3, to both arms alike.
    const drifted = (a: Applicant) => ({ ...a, debt_ratio: Math.min(5, a.debt_ratio + 0.3) })
    await traffic(5, 1_100, drifted)
    await traffic(6, 1_100, drifted)
    await tick()
    expect(await weights()).toEqual(['stable:v5=99', 'canary:v6=1'])
    const [decision] = await history()
    expect(decision).toMatchObject({ actor: 'controller', action: 'alert', from_weight: 1, to_weight: 1 })
    // The backend's own report says the same of each arm.
    const report = (await (await edge(`/v1/models/${MODEL}/versions/6/drift?window=5m`)).json()) as { dataset: { verdict: string; critical_features: string[] } }
    expect(report.dataset).toMatchObject({ verdict: 'critical', critical_features: expect.arrayContaining(['debt_ratio']) })
    expect((await edge(`/v1/models/${MODEL}/versions/6/drift`, { key: client })).status).toBe(403)
    const bad = await edge(`/v1/models/${MODEL}/versions/6/drift?window=9h`)
    expect(bad.status).toBe(400)
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/)
    expect((await edge(`/v1/models/${MODEL}/versions/77/drift`)).status).toBe(404)
  })

  it('posted every controller decision to the webhook, in order', async () => {
    const controller = (await history()).filter((e) => e.actor === 'controller').reverse()
    const posted = receiver.bodies as HistoryEntry[]
    expect(posted.map((e) => e.id)).toEqual(controller.map((e) => e.id))
    // The shifted canary's first two critical windows were holds, each with its own reason.
    expect(posted.map((e) => e.action)).toEqual(['step', 'step', 'step', 'promote', 'rollback', 'hold', 'hold', 'rollback', 'alert'])
  })
})
