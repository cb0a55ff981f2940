import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HistoryEntry } from '../../edge/stores/history/history-store.ts'
import { assignArm, type Rollout } from '../../edge/rollout/rollout.ts'
import { generateApplicants } from '../../tools/training/applicants.ts'
import { createCanaryRepository } from '../../dev/canary-repository.ts'
import { sendPinnedTraffic } from '../../dev/canary-traffic.ts'
import { promtoolCheckMetrics } from '../edge/pipeline/request-metrics/promtool.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient, replaceRollout, type Schemas } from '../support/client.ts'
import { startForwardingProxy } from '../support/forwarding-proxy.ts'
import { ROLLOUT_KEYS, STEP_EVERY_TICK, startStack, type Stack } from '../support/stack.ts'

/**
 * A failing canary that no client sees, end to end: the bundled worker in real workerd, the real
 * backend (drift counted into a real redis-server), and in between a pass-through proxy that
 * stalls every infer call to one version (a canary that never answers). Each scenario runs on
 * versions no earlier one sent traffic to.
 */

const TOKEN = 'canary-fallback-test-token-012345'
const MODEL = 'credit-risk'
/** 1 stable; 2 emits NaN; 3 and 5 the same network behind a stall; 4 emits NaN, shadowed only. */
const STALLED_VERSION = 3
const ANOTHER_STALLED_VERSION = 5
const ROWS = 16

let repository: Awaited<ReturnType<typeof createCanaryRepository>>
let stack: Stack
let worker: RunningWorker
let client = ''
let admin = ''
let seed = 70_000

/** Forwards everything to the backend, except infer calls to the stalled version: those are held until the caller gives up. */
const startStallingProxy = (target: string): Promise<Server> =>
  startForwardingProxy(target, (req) => {
    if (!req.url?.includes(`/versions/${STALLED_VERSION}/infer`) && !req.url?.includes(`/versions/${ANOTHER_STALLED_VERSION}/infer`)) return false
    req.resume()
    return true
  })

const edge = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${worker.url}${path}`, { ...init, headers: { 'x-api-key': init.key ?? admin, 'content-type': 'application/json', ...init.headers } })

const putRollout = async (rollout: Schemas['RolloutPut']) => {
  const res = await replaceRollout(edgeClient(worker.url, { key: admin }), rollout, MODEL)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}

const halfCanary = (stable: number, canary: number) => ({
  salt: `fallback-${stable}-${canary}`,
  arms: [{ variant: 'stable', version: stable, weight: 50 }, { variant: 'canary', version: canary, weight: 50 }],
  canary: { variant: 'canary', baseline_variant: 'stable' },
})

interface Answer {
  user: string
  status: number
  variant: string | null
  version: string | null
  fallback: string | null
}

/** One unpinned predict request per user (each its own sticky key), answered in turn. */
const users = async (count: number, headers: Record<string, string> = {}): Promise<Answer[]> => {
  const answers: Answer[] = []
  for (let i = 0; i < count; i++) {
    const user = `user-${seed}-${i}`
    const res = await edge(`/v1/models/${MODEL}/predict`, {
      key: client,
      method: 'POST',
      headers,
      body: JSON.stringify({ instances: generateApplicants(ROWS, seed + i).applicants, entity: { user_id: user } }),
    })
    await res.arrayBuffer()
    answers.push({ user, status: res.status, variant: res.headers.get('x-variant'), version: res.headers.get('x-model-version'), fallback: res.headers.get('x-canary-fallback') })
  }
  seed += count
  return answers
}

const tally = (answers: Answer[]) => {
  const counts: Record<string, number> = {}
  for (const a of answers) {
    const key = `${a.status} ${a.variant} v${a.version}${a.fallback ? ' fallback' : ''}`
    counts[key] = (counts[key] ?? 0) + 1
  }
  return counts
}

const metrics = async () => (await edge('/metrics')).text()
const sample = (exposition: string, prefix: string): number =>
  exposition.split('\n').filter((l) => l.startsWith(prefix)).reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)

const tick = async () => {
  const result = await (await worker.mf.getWorker()).scheduled({ cron: '* * * * *', scheduledTime: new Date() })
  expect(result.outcome).toBe('ok')
}

const rollout = async () => ((await (await edge(`/v1/models/${MODEL}/rollout`)).json()) as { rollout: Rollout }).rollout
const weights = async () => (await rollout()).arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)

beforeAll(async () => {
  repository = await createCanaryRepository({ 1: 'same', 2: 'nan', 3: 'same', 4: 'nan', 5: 'same' })
  stack = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000 },
    backend: { MODEL_REPOSITORY: repository.root, DRIFT_FLUSH_MS: '500' },
    keys: ROLLOUT_KEYS,
    between: async (backendUrl) => {
      const proxy = await startStallingProxy(backendUrl)
      return {
        url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        close: () => {
          proxy.closeAllConnections()
          return new Promise((resolve) => proxy.close(resolve))
        },
      }
    },
    worker: STEP_EVERY_TICK,
  })
  worker = stack.worker
  client = stack.keys.app!
  admin = stack.keys.ops!
})

afterAll(async () => {
  await stack?.stop()
  await repository?.remove()
})

describe('a failing canary answered from stable, in workerd', () => {
  it('answers every user of a NaN canary at 50% from stable, and the controller still rolls it back on its first tick', async () => {
    await putRollout(halfCanary(1, 2))
    const answers = await users(40)
    const counts = tally(answers)
    const fellBack = counts['200 stable v1 fallback'] ?? 0
    // No client got an error; the canary's half (by sticky bucket) was answered by stable.
    expect(Object.keys(counts).sort()).toEqual(['200 stable v1', '200 stable v1 fallback'])
    expect(fellBack).toBeGreaterThan(5)
    expect(fellBack).toBeLessThan(35)

    // A pin is a promise: the NaN version itself still answers its failure.
    const pinned = await sendPinnedTraffic({ edgeUrl: worker.url, key: client, model: MODEL, version: 2, rows: 64, seed: seed++ })
    expect([...pinned]).toEqual([[502, 1]])

    const exposition = await metrics()
    expect(sample(exposition, `edge_infer_edge_canary_fallbacks_total{model="${MODEL}",version="2",reason="non_finite"}`)).toBe(fellBack)
    // The client-facing answers are stable's, served by the backend.
    expect(sample(exposition, `edge_infer_edge_requests_total{model="${MODEL}",version="1",variant="stable",status_class="2xx",code="200",served_by="backend"}`)).toBe(40)
    expect(sample(exposition, `edge_infer_edge_requests_total{model="${MODEL}",version="2",variant="canary"`)).toBe(0)
    expect(await promtoolCheckMetrics(exposition)).toEqual({ code: 0, findings: '' })

    // The backend counted the canary's NaN outputs: the first tick rolls it back.
    await tick()
    expect(await weights()).toEqual(['stable:v1=100', 'canary:v2=0'])
    const [decision] = ((await (await edge(`/v1/models/${MODEL}/rollout/history`)).json()) as { entries: HistoryEntry[] }).entries
    expect(decision).toMatchObject({ actor: 'controller', action: 'rollback', from_weight: 50, to_weight: 0 })
    expect(decision.reason).toMatch(/NaN/)
  })

  it('never reroutes a shadow copy: a NaN shadow fails on its own, its clients are answered by stable', async () => {
    await putRollout({ salt: 'shadow-4', arms: [{ variant: 'stable', version: 1, weight: 100 }], shadow: { version: 4, percent: 100 } })
    const answers = await users(4)
    expect(tally(answers)).toEqual({ '200 stable v1': 4 })
    const shadowFailures = `edge_infer_edge_requests_total{model="${MODEL}",version="4",variant="shadow",status_class="5xx",code="502"`
    // Shadows run after the response: wait (bounded) for all four to be counted.
    let failed = 0
    for (let i = 0; i < 50 && failed < 4; i++) {
      failed = sample(await metrics(), shadowFailures)
      if (failed < 4) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(failed).toBe(4)
    expect(sample(await metrics(), `edge_infer_edge_canary_fallbacks_total{model="${MODEL}",version="4"`)).toBe(0)
  })

  it('reroutes a canary that never answers within the deadline', async () => {
    await putRollout(halfCanary(1, STALLED_VERSION))
    const answers = await users(8, { 'x-request-deadline-ms': '1200' })
    const counts = tally(answers)
    expect(Object.keys(counts).sort()).toEqual(['200 stable v1', '200 stable v1 fallback'])
    const timedOut = answers.filter((a) => a.fallback === '1')
    expect(timedOut.length).toBeGreaterThan(0)
    // Stalls time out (later ones may find the canary's circuit open): every one rerouted.
    const exposition = await metrics()
    expect(sample(exposition, `edge_infer_edge_canary_fallbacks_total{model="${MODEL}",version="${STALLED_VERSION}",reason="timeout"}`)).toBeGreaterThan(0)
    expect(sample(exposition, `edge_infer_edge_canary_fallbacks_total{model="${MODEL}",version="${STALLED_VERSION}"`)).toBe(timedOut.length)

  })

  it('answers the canary\'s 504 when the deadline leaves no room for a retry on stable (not a hang)', async () => {
    await putRollout(halfCanary(1, ANOTHER_STALLED_VERSION))
    // A user the stored layout puts in the canary arm, found without sending it there (its circuit stays closed).
    const stored = await rollout()
    const user = Array.from({ length: 100 }, (_, i) => `no-room-${i}`).find((u) => assignArm(stored, MODEL, u).variant === 'canary')!
    // Of 60 ms the quarter held back for stable is below what a retry needs: the canary's timeout is the answer.
    const res = await edge(`/v1/models/${MODEL}/predict`, {
      key: client, method: 'POST', headers: { 'x-request-deadline-ms': '60' },
      body: JSON.stringify({ instances: generateApplicants(ROWS, 1).applicants, entity: { user_id: user } }),
    })
    await res.arrayBuffer()
    expect([res.status, res.headers.get('x-variant'), res.headers.get('x-model-version'), res.headers.get('x-canary-fallback')]).toEqual([504, 'canary', String(ANOTHER_STALLED_VERSION), null])

    // The tensor route reroutes the same way (on errors; it passes outputs on as they are).
    const width = 23
    const tensor = await edge(`/v2/models/${MODEL}/infer`, {
      key: client, method: 'POST', headers: { 'x-request-deadline-ms': '1200', 'x-experiment-key': user },
      body: JSON.stringify({ inputs: [{ name: 'features', shape: [1, width], datatype: 'FP32', data: new Array(width).fill(0) }] }),
    })
    expect(tensor.status, await tensor.clone().text()).toBe(200)
    expect([tensor.headers.get('x-variant'), tensor.headers.get('x-model-version'), tensor.headers.get('x-canary-fallback')]).toEqual(['stable', '1', '1'])
  })
})
