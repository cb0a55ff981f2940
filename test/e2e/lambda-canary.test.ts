import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HistoryEntry } from '../../edge/stores/history/history-store.ts'
import type { Rollout } from '../../edge/rollout/rollout.ts'
import { createCanaryRepository } from '../../dev/canary-repository.ts'
import { canaryRollout, sendPinnedTraffic } from '../../dev/canary-traffic.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../dev/lambda-endpoint/server.ts'
import { edgeClient, replaceRollout } from '../support/client.ts'
import { refusingInfer } from '../support/forwarding-proxy.ts'
import { lambdaBindings } from '../support/lambda-bindings.ts'
import { setProcessEnv } from '../support/process-env.ts'
import { ROLLOUT_KEYS, STEP_EVERY_TICK, startStack, type Stack } from '../support/stack.ts'

/**
 * Issue 33 §1: the canary controller sees Lambda-served canary traffic. The bundled worker in
 * workerd, the real backend behind a hop that refuses every infer call (so the backend serves
 * nothing), the local Lambda Invoke endpoint running the backend's handler, and one redis-server
 * behind the Upstash adapter that handler and backend merge drift counts in. The controller
 * (the worker's scheduled handler) reads each arm from the backend's drift report: only the
 * Lambda's counts can move the canary.
 */

const TOKEN = 'lambda-canary-test-token-0123456789'
const MODEL = 'credit-risk'
const FUNCTION = 'edge-infer-cpu'
let repository: Awaited<ReturnType<typeof createCanaryRepository>>
let endpoint: LambdaEndpoint
let stack: Stack
let restoreEnv: (() => void) | undefined
let seed = 90_000

beforeAll(async () => {
  repository = await createCanaryRepository({ 1: 'same', 2: 'same' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  stack = await startStack({
    redis: { token: TOKEN, commandTimeoutMs: 2_000 },
    backend: { MODEL_REPOSITORY: repository.root },
    between: refusingInfer,
    keys: ROLLOUT_KEYS,
    worker: { ...lambdaBindings(FUNCTION, endpoint.url), ...STEP_EVERY_TICK, CONTROLLER_P95_SLACK_MS: '1000' },
  })
  // The handler's manager and drift counter are made on the first invoke, after this.
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: repository.root, LOG_LEVEL: 'silent', UPSTASH_REDIS_REST_URL: stack.upstash!.adapter.url, UPSTASH_REDIS_REST_TOKEN: TOKEN })
})

afterAll(async () => {
  await stack?.stop()
  await endpoint?.close()
  restoreEnv?.()
  await repository?.remove()
})

const admin = () => edgeClient(stack.worker.url, { key: stack.keys.ops! })
const rollout = async (): Promise<Rollout> => ((await (await fetch(`${stack.worker.url}/v1/models/${MODEL}/rollout`, { headers: { 'x-api-key': stack.keys.ops! } })).json()) as { rollout: Rollout }).rollout
const history = async (): Promise<HistoryEntry[]> =>
  ((await (await fetch(`${stack.worker.url}/v1/models/${MODEL}/rollout/history`, { headers: { 'x-api-key': stack.keys.ops! } })).json()) as { entries: HistoryEntry[] }).entries
const weights = async () => (await rollout()).arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)

/** Fires the worker's scheduled handler as the minute's Cron Trigger does. */
const tick = async () => {
  const result = await (await stack.worker.mf.getWorker()).scheduled({ cron: '* * * * *', scheduledTime: new Date() })
  expect(result.outcome).toBe('ok')
}

const traffic = (version: number, rows: number) => sendPinnedTraffic({ edgeUrl: stack.worker.url, key: stack.keys.app!, model: MODEL, version, rows, seed: seed++ })

describe('a canary whose traffic the Lambda tier serves', () => {
  it('holds while no arm has rows, then steps on the Lambda-served counts alone', async () => {
    const put = await replaceRollout(admin(), canaryRollout(1, 2), MODEL)
    expect(put.status, JSON.stringify(put.body)).toBe(200)
    await tick()
    expect(await weights()).toEqual(['stable:v1=99', 'canary:v2=1'])

    const before = endpoint.invocations()
    const answered = [await traffic(1, 1_100), await traffic(2, 1_100)]
    for (const statuses of answered) expect([...statuses.keys()]).toEqual([200])
    // Every answer came from the Lambda: the hop let no infer call reach the backend.
    expect(endpoint.invocations() - before).toBe([...answered].reduce((n, s) => n + s.get(200)!, 0))
    await tick()
    expect(await weights()).toEqual(['stable:v1=95', 'canary:v2=5'])
    const decisions = (await history()).filter((e) => e.actor === 'controller')
    // Newest first: the hold before any traffic, for want of rows, then the step.
    expect(decisions.map((e) => `${e.action} ${e.from_weight}→${e.to_weight}`)).toEqual(['step 1→5', 'hold 1→1'])
    expect(decisions[1]!.reason).toMatch(/below 1000 rows/)
  })
})
