import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HistoryEntry } from '../../edge/stores/history/history-store.ts'
import type { Rollout } from '../../edge/rollout/rollout.ts'
import { listen, readBody } from '../../dev/http-server.ts'
import { createCanaryRepository } from '../../dev/canary-repository.ts'
import { type LabelledAnswer, ROWS_PER_REQUEST, canaryRollout, sendFeedback, sendPinnedTraffic } from '../../dev/canary-traffic.ts'
import { until } from '../backend/support/backend-process.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import { edgeClient, replaceRollout, type Schemas } from '../support/client.ts'
import { STEP_EVERY_TICK, startStack, type Stack } from '../support/stack.ts'

/**
 * What only the edge can see, end to end: the bundled worker in real workerd, the real backend
 * counting into a real redis-server, and between them a pass-through proxy that can stop
 * answering one version's infer calls. A label-flipped canary (its prediction histogram the
 * stable arm's) is caught by realized quality from feedback; a canary whose calls time out at
 * the edge, which the backend never sees, is caught by the edge's own failure counts.
 */

const TOKEN = 'quality-canary-e2e-token-0123456'
const MODEL = 'credit-risk'
const LABELS = ['low_risk', 'high_risk']
/** The version whose infer calls the proxy leaves hanging. */
const HANGING = 4

let repository: Awaited<ReturnType<typeof createCanaryRepository>>
let stack: Stack
let worker: RunningWorker
const keys = { client: '', labeller: '', admin: '' }
let seed = 70_000

const edge = (path: string, init: RequestInit = {}) =>
  fetch(`${worker.url}${path}`, { ...init, headers: { 'x-api-key': keys.admin, 'content-type': 'application/json', ...init.headers } })

const putRollout = async (rollout: Schemas['RolloutPut']) => {
  const res = await replaceRollout(edgeClient(worker.url, { key: keys.admin }), rollout, MODEL)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}
const weights = async () => ((await (await edge(`/v1/models/${MODEL}/rollout`)).json()) as { rollout: Rollout }).rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)
const history = async (): Promise<HistoryEntry[]> => ((await (await edge(`/v1/models/${MODEL}/rollout/history`)).json()) as { entries: HistoryEntry[] }).entries
const tick = async () => expect((await (await worker.mf.getWorker()).scheduled({ cron: '* * * * *', scheduledTime: new Date() })).outcome).toBe('ok')

/** `rows` applicants pinned to `version`, each answered row then labelled with its true label. */
const labelledTraffic = async (version: number, rows: number) => {
  const answers: LabelledAnswer[] = []
  const statuses = await sendPinnedTraffic({ edgeUrl: worker.url, key: keys.client, model: MODEL, version, rows, seed: seed++, answered: (a) => answers.push(a) })
  expect([...statuses.keys()]).toEqual([200])
  return sendFeedback(worker.url, keys.labeller, answers, LABELS)
}

/** Passes everything through to the backend, except infer calls to `HANGING`, which get no answer at all. */
const startProxy = async (target: string) => {
  const held: ServerResponse[] = []
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req, 16 << 20)
    if (req.url?.includes(`/versions/${HANGING}/infer`)) return void held.push(res)
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'content-length') as Array<[string, string]>)
    const answer = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(req.method === 'GET' ? {} : { body }) })
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' })
    res.end(Buffer.from(await answer.arrayBuffer()))
  })
  const url = await listen(server, 0, '127.0.0.1')
  return {
    url,
    close: () => {
      for (const res of held) res.destroy()
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

beforeAll(async () => {
  // 1 and 3: the demo network; 2: half the applicants (the riskiest) ranked upside down; 4: the demo network behind a proxy that hangs.
  repository = await createCanaryRepository({ 1: 'same', 2: { labelFlip: 0.5 }, 3: 'same', 4: 'same' })
  stack = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000 },
    backend: { MODEL_REPOSITORY: repository.root, DRIFT_FLUSH_MS: '500' },
    keys: [
      { name: 'app', scopes: ['predict'], rate_limit_per_minute: 1_000_000 },
      { name: 'labels', tenant: 'app', scopes: ['feedback'], rate_limit_per_minute: 1_000_000 },
      { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 1_000_000 },
    ],
    between: startProxy,
    worker: {
      MAX_INSTANCES: String(ROWS_PER_REQUEST),
      FEEDBACK_MODELS: MODEL,
      ...STEP_EVERY_TICK,
      CONTROLLER_MIN_LABELS: '500',
      CONTROLLER_P95_SLACK_MS: '1000',
    },
  })
  worker = stack.worker
  keys.client = stack.keys.app!
  keys.labeller = stack.keys.labels!
  keys.admin = stack.keys.ops!
})

afterAll(async () => {
  await stack?.stop()
  await repository?.remove()
})

describe('what only the edge sees, in workerd', () => {
  it('rolls back a label-flipped canary on realized quality, where prediction drift sees nothing', async () => {
    await putRollout(canaryRollout(1, 2))
    expect(await labelledTraffic(1, 1_100)).toEqual({ accepted: 1_100 })
    expect(await labelledTraffic(2, 1_100)).toEqual({ accepted: 1_100 })
    await tick()
    expect(await weights()).toEqual(['stable:v1=100', 'canary:v2=0'])
    const [decision] = await history()
    expect(decision).toMatchObject({ actor: 'controller', action: 'rollback', from_weight: 1, to_weight: 0 })
    expect(decision.reason).toMatch(/^canary realized accuracy 0\.\d+ is worse than stable's 0\.\d+ by more than 0\.05 \(1100\/1100 labels\)$/)
    const n = decision.numbers!
    // Drift alone would have stepped it: the two prediction histograms agree.
    expect(n.psi).not.toBeNull()
    expect(n.psi!).toBeLessThan(n.psi_warning)
    expect(n.stable.realized!.accuracy! - n.canary.realized!.accuracy!).toBeGreaterThan(0.1)
    // The quality route shows the same labels beside the backend's label-free estimate (CBPE).
    type Figures = { labels: number; accuracy: number; roc_auc: number }
    const quality = (await (await edge(`/v1/models/${MODEL}/quality?window=15m`)).json()) as { versions: Array<{ version: number; realized: Figures; estimated: Figures | null }> }
    const [stable, flipped] = [1, 2].map((v) => quality.versions.find((q) => q.version === v)!)
    expect([stable.realized.labels, flipped.realized.labels]).toEqual([1_100, 1_100])
    // On the demo network the estimate is the realized figure within 3σ of 1,100 labels' sampling error...
    const sigma = Math.sqrt((stable.realized.accuracy * (1 - stable.realized.accuracy)) / stable.realized.labels)
    expect(Math.abs(stable.estimated!.accuracy - stable.realized.accuracy)).toBeLessThan(3 * sigma)
    expect(Math.abs(stable.estimated!.roc_auc - stable.realized.roc_auc)).toBeLessThan(0.04)
    // ...and on the flipped canary the labels show the gap the estimate cannot see.
    expect(flipped.estimated!.accuracy - flipped.realized.accuracy).toBeGreaterThan(0.15)
    // The drift report of the same minutes carries both, side by side.
    const report = (await (await edge(`/v1/models/${MODEL}/versions/2/drift?window=15m`)).json()) as { prediction: { realized_quality: Figures | null; estimated_quality?: Figures } }
    expect(report.prediction.realized_quality).toMatchObject({ labels: 1_100, accuracy: flipped.realized.accuracy })
    expect(report.prediction.estimated_quality!.accuracy).toBeGreaterThan(report.prediction.realized_quality!.accuracy + 0.15)
  })

  it('rolls back a canary whose calls time out at the edge, which the backend never counted', async () => {
    await putRollout(canaryRollout(3, HANGING))
    await sendPinnedTraffic({ edgeUrl: worker.url, key: keys.client, model: MODEL, version: 3, rows: 1_100, seed: seed++ })
    const statuses = await sendPinnedTraffic({ edgeUrl: worker.url, key: keys.client, model: MODEL, version: HANGING, rows: 1_100, seed: seed++, deadlineMs: 200 })
    // Timeouts until the circuit opens, then refusals: none reached the backend.
    expect([...statuses.keys()].sort()).toEqual([503, 504])
    // An isolate writes its edge failures to Redis once a second: the tick reads what has landed.
    const edgeFailures = async () => ((await (await edge(`/v1/models/${MODEL}/quality?window=15m`)).json()) as { versions: Array<{ version: number; edge_failures: number }> }).versions.find((v) => v.version === HANGING)?.edge_failures
    await until(async () => (await edgeFailures()) === 18)
    await tick()
    expect(await weights()).toEqual(['stable:v3=100', `canary:v${HANGING}=0`])
    const [decision] = await history()
    expect(decision).toMatchObject({ action: 'rollback', from_weight: 1, to_weight: 0 })
    expect(decision.reason).toMatch(/^canary error rate 100\.00% exceeds stable's 0\.00%/)
    expect(decision.numbers!.canary).toMatchObject({ requests: 18, errors: 18, edge_failures: 18, rows: 0 })
  })

  it('accepts a label sent the moment its prediction is answered: the served record is written before the answer', async () => {
    for (let i = 0; i < 20; i++) {
      const answers: LabelledAnswer[] = []
      await sendPinnedTraffic({ edgeUrl: worker.url, key: keys.client, model: MODEL, version: 3, rows: ROWS_PER_REQUEST, seed: seed++, answered: (a) => answers.push(a) })
      expect(await sendFeedback(worker.url, keys.labeller, answers, LABELS)).toEqual({ accepted: ROWS_PER_REQUEST })
    }
  })
})
