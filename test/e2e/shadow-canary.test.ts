import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HistoryEntry } from '../../edge/stores/history/history-store.ts'
import type { Rollout } from '../../edge/rollout/rollout.ts'
import type { ShadowPair } from '../../edge/stores/tallies/shadow.ts'
import { createCanaryRepository } from '../../dev/canary-repository.ts'
import { ROWS_PER_REQUEST } from '../../dev/canary-traffic.ts'
import { generateApplicants } from '../../tools/training/applicants.ts'
import { startReceiver, type Receiver } from '../edge/rollout/receiver.ts'
import { samplesOf, total } from '../edge/pipeline/request-metrics/samples.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { ROLLOUT_KEYS, startStack, type Stack } from '../support/stack.ts'

/**
 * The shadow comparison and the controller's shadow rule end to end: the bundled worker in real
 * workerd (its scheduled handler fired as a Cron Trigger would), the real backend serving an
 * agreeing shadow (the same network) and a disagreeing one (every risk 3 logits higher), the
 * edge's counts merged through a real redis-server, and a real webhook receiver.
 */

const TOKEN = 'shadow-canary-e2e-token-0123456789'
const MODEL = 'credit-risk'
const PROMOTE = { min_rows: 512, min_agreement: 0.99, max_error_rate: 0.01, window_minutes: 60, canary_percent: 5 }
/** Requests of `ROWS_PER_REQUEST` rows each scenario sends. */
const REQUESTS = 10
const ROWS = REQUESTS * ROWS_PER_REQUEST

let repository: Awaited<ReturnType<typeof createCanaryRepository>>
let stack: Stack
let receiver: Receiver
let worker: RunningWorker
let client = ''
let admin = ''
let seed = 70_000

const edge = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${worker.url}${path}`, { ...init, headers: { 'x-api-key': init.key ?? admin, 'content-type': 'application/json', ...init.headers } })

const rollout = async (): Promise<Rollout> => ((await (await edge(`/v1/models/${MODEL}/rollout`)).json()) as { rollout: Rollout }).rollout
const controllerEntries = async (): Promise<HistoryEntry[]> =>
  ((await (await edge(`/v1/models/${MODEL}/rollout/history`)).json()) as { entries: HistoryEntry[] }).entries.filter((e) => e.actor === 'controller')

const putRollout = async (body: unknown) => {
  const res = await edge(`/v1/models/${MODEL}/rollout`, { method: 'PUT', body: JSON.stringify(body), headers: { 'if-match': (await edge(`/v1/models/${MODEL}/rollout`)).headers.get('etag')! } })
  expect(res.status, await res.clone().text()).toBe(200)
}

/** Unpinned predict traffic (sticky by user id, so every request is in the shadow's 100%). */
const traffic = async () => {
  const { applicants } = generateApplicants(ROWS, seed)
  for (let at = 0; at < ROWS; at += ROWS_PER_REQUEST) {
    const res = await edge(`/v1/models/${MODEL}/predict`, { key: client, method: 'POST', body: JSON.stringify({ instances: applicants.slice(at, at + ROWS_PER_REQUEST), entity: { user_id: `shadow-${seed}-${at}` } }) })
    expect(res.status).toBe(200)
    await res.arrayBuffer()
  }
  seed++
}

const metrics = async () => samplesOf(await (await edge('/metrics')).text())

/** The shadow calls run after each answer: waits (bounded) until the edge counted `rows` compared rows for the pair. */
const comparedRows = async (version: number, shadow: number, rows: number) => {
  const pair = { model: MODEL, version: String(version), shadow_version: String(shadow) }
  let seen = 0
  for (let i = 0; i < 150 && seen < rows; i++) {
    seen = total(await metrics(), 'edge_infer_shadow_compared_rows_total', pair)
    if (seen < rows) await new Promise((resolve) => setTimeout(resolve, 200))
  }
  expect(seen).toBe(rows)
  return pair
}

/** Fires the worker's scheduled handler as the minute's Cron Trigger does. */
const tick = async () => {
  const result = await (await worker.mf.getWorker()).scheduled({ cron: '* * * * *', scheduledTime: new Date() })
  expect(result.outcome).toBe('ok')
}

beforeAll(async () => {
  repository = await createCanaryRepository({ 1: 'same', 2: 'same', 3: { shiftLogit: 3 } })
  receiver = await startReceiver()
  stack = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000 },
    backend: { MODEL_REPOSITORY: repository.root },
    keys: ROLLOUT_KEYS,
    worker: { MAX_INSTANCES: String(ROWS_PER_REQUEST), ALERT_WEBHOOK_URL: receiver.url },
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

describe('shadow comparison and shadow → canary in workerd, counts merged in Redis', () => {
  it('with the option off, counts the comparison and starts nothing', async () => {
    const plain = { salt: 'shadow-e2e', arms: [{ variant: 'stable', version: 1, weight: 100 }], shadow: { version: 2, percent: 100 } }
    await putRollout(plain)
    await traffic()
    const pair = await comparedRows(1, 2, ROWS)
    const samples = await metrics()
    // The same network: every label agrees, every |Δp| in the first bucket.
    expect(total(samples, 'edge_infer_shadow_agreeing_rows_total', pair)).toBe(ROWS)
    expect(total(samples, 'edge_infer_shadow_probability_diff_bucket', { ...pair, le: '0.001' })).toBe(ROWS)
    expect(total(samples, 'edge_infer_edge_requests_total', { model: MODEL, version: '2', variant: 'shadow', code: '200' })).toBe(REQUESTS)
    await tick()
    expect(await rollout()).toMatchObject({ arms: plain.arms, shadow: plain.shadow })
    expect((await rollout()).canary).toBeUndefined()
    expect(await controllerEntries()).toEqual([])
  })

  it('starts a canary of an agreeing shadow once a window qualifies, recorded, counted and posted', async () => {
    await putRollout({ salt: 'shadow-e2e', arms: [{ variant: 'stable', version: 1, weight: 100 }], shadow: { version: 2, percent: 100, promote: PROMOTE } })
    // The first tick begins the window: the rows counted before it are not judged.
    await tick()
    expect((await rollout()).shadow?.promote?.window).toMatchObject({ version: 2, at_start: { rows: ROWS, agreeing: ROWS, calls: REQUESTS, errors: 0 } })
    expect(await controllerEntries()).toEqual([])
    await traffic()
    await comparedRows(1, 2, 2 * ROWS)
    await tick()
    const started = await rollout()
    expect(started.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)).toEqual(['stable:v1=95', 'canary:v2=5'])
    expect(started.canary).toMatchObject({ variant: 'canary', baseline_variant: 'stable' })
    expect(started.shadow).toBeUndefined()
    const [entry, ...others] = await controllerEntries()
    expect(others).toEqual([])
    expect(entry).toMatchObject({ action: 'start_canary', variant: 'canary', from_weight: 0, to_weight: 5 })
    expect(entry.reason).toBe(`shadow v2 agreed on 100.00% of ${ROWS} rows, error rate 0.00% (0/${REQUESTS} calls) within 60 min: canary started at 5%`)
    expect(total(await metrics(), 'edge_infer_rollout_decisions_total', { model: MODEL, action: 'start_canary' })).toBe(1)
    // Delivery is in the background of the tick: bounded wait for the receiver.
    for (let i = 0; i < 100 && receiver.bodies.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 100))
    expect((receiver.bodies as HistoryEntry[]).map((e) => e.id)).toEqual([entry.id])
    // The drift report of the version carries its comparison as a shadow.
    const report = await edge(`/v1/models/${MODEL}/versions/2/drift`)
    expect(report.status).toBe(200)
    const { shadow_comparison } = (await report.json()) as { shadow_comparison: ShadowPair[] }
    expect(shadow_comparison).toMatchObject([{ model: MODEL, version: 1, shadow_version: 2, rows: 2 * ROWS, agreeing: 2 * ROWS, agreement: 1 }])
    expect(shadow_comparison[0].p99_abs_diff).toBeLessThanOrEqual(0.001)
  })

  it('does not start a canary of a shadow that disagrees', async () => {
    await putRollout({ salt: 'shadow-e2e-3', arms: [{ variant: 'stable', version: 1, weight: 100 }], shadow: { version: 3, percent: 100, promote: PROMOTE } })
    await tick()
    await traffic()
    const pair = await comparedRows(1, 3, ROWS)
    const agreeing = total(await metrics(), 'edge_infer_shadow_agreeing_rows_total', pair)
    expect(agreeing / ROWS).toBeLessThan(PROMOTE.min_agreement)
    await tick()
    const after = await rollout()
    expect(after.canary).toBeUndefined()
    expect(after.arms).toEqual([{ variant: 'stable', version: 1, weight: 100 }])
    expect(after.shadow?.version).toBe(3)
    expect((await controllerEntries()).map((e) => e.action)).toEqual(['start_canary'])
    expect(receiver.bodies).toHaveLength(1)
  })
})
