import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { defaultConfig } from '../../../infra/k8s/config.ts'
import { generateApplicants } from '../../../tools/training/applicants.ts'
import { createRandom } from '../../../tools/training/random.ts'
import { dashboard } from '../../../infra/observability/dashboard.ts'
import { RENDERED_DIR, RULES_FILE } from '../../../infra/observability/render.ts'
import { BACKEND_JOB, allAlerts, allRecordings, type AlertRule } from '../../../infra/observability/rules.ts'
import { EDGE_METRICS } from '../../../infra/observability/sources.ts'
import { post, until, type BackendProcess } from '../../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../../backend/support/fixture-repository.ts'
import type { RunningWorker } from '../../edge/support/workerd.ts'
import { edgeClient, replaceRollout, type Instance, type Schemas } from '../../support/client.ts'
import { ROLLOUT_KEYS, startStack, type Stack } from '../../support/stack.ts'
import { exposedNames } from './support/exposition.ts'
import { startPrometheus, type PrometheusServer } from './support/prometheus.ts'
import { legendLabels, panelQueries, substituteVariables, type DashboardView } from './support/promql.ts'

/**
 * The rules and the dashboard against a real Prometheus scraping a real backend and the edge
 * worker in workerd every second, after a bounded burst of traffic: canary and stable arms
 * split by the rollout, pinned requests, a refused body at the backend and a rate-limited key at
 * the edge. Every panel query and every rule's signal must return data here, unless listed below
 * with the reason it cannot in this setup; no rule may fail to evaluate and no alert may be
 * pending or firing.
 */

/** Queries that are empty in this setup by construction, and why. */
const EXPECTED_EMPTY: Record<string, string> = {
  'signal:EdgeInferCanaryRolledBack': 'no canary is rolled back in a healthy run (the decisions panel reads the same counter)',
  'signal:EdgeInferFallbackServing': 'no Lambda tier is configured: nothing is served_by="lambda"',
  'signal:EdgeInferBackendTargetAbsent': 'absent() is empty while the backend target is scraped',
  'signal:EdgeInferQueueDepthAbsent': 'absent() is empty while the queue-depth gauge KEDA reads is scraped',
  'signal:EdgeInferGpuPodOnCpu': 'no GPU pod here: no series carries edge_infer_variant="gpu"',
  'panel:Replicas/B': 'kube-state-metrics does not run here',
  'panel:Replicas/C': 'kube-state-metrics does not run here (nor an HPA)',
}

const MODEL = 'credit-risk'
let client = ''
let admin = ''
let limited = ''
let stack: Stack
let backend: BackendProcess
let worker: RunningWorker
let prometheus: PrometheusServer

const hostPort = (url: string) => new URL(url).host

const edge = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${worker.url}${path}`, { ...init, headers: { 'x-api-key': init.key ?? client, 'content-type': 'application/json', ...init.headers } })

const putRollout = async (rollout: Schemas['RolloutPut']) => {
  const res = await replaceRollout(edgeClient(worker.url, { key: admin }), rollout, MODEL)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
}

const ROWS = 4

/**
 * `requests` predicts of synthetic applicants (without the features the model reads from the
 * user entity), each from its own user (the sticky key); resolves with how many got each status and variant.
 */
/** Feedback items for answered rows: each label drawn from the answer's own scores, so realized and estimated quality agree within sampling error. */
type FeedbackItems = Array<{ request_id: string; index: number; label: string }>
const draw = createRandom(7)

const predicts = async (requests: number, { key = client, pin, edit = (i) => i, labelled }: { key?: string; pin?: number; edit?: (instance: Record<string, unknown>) => Record<string, unknown>; labelled?: FeedbackItems } = {}): Promise<Record<string, number>> => {
  const config = JSON.parse(await readFile(join(DEMO_REPOSITORY, MODEL, 'config.json'), 'utf8')) as { features: { features: Array<{ name: string; source?: unknown }> } }
  const fromEntity = config.features.features.filter((f) => f.source !== undefined).map((f) => f.name)
  const instances = generateApplicants(requests * ROWS, seed++).applicants.map((a) => edit(Object.fromEntries(Object.entries(a).filter(([name]) => !fromEntity.includes(name)))))
  const seen: Record<string, number> = {}
  for (let i = 0; i < requests; i++) {
    const res = await edgeClient(worker.url, { key }).predict(instances.slice(i * ROWS, (i + 1) * ROWS) as Instance[], {
      model: MODEL,
      ...(pin !== undefined && { version: pin }),
      // Users the feature store does not know: their entity features take the spec's defaults.
      entity: { user_id: `user-${seed}-${i}` },
    })
    if (labelled && res.status === 200 && 'predictions' in res.body) {
      const { request_id, predictions } = res.body
      predictions.forEach(({ scores }, index) => {
        let left = draw.next()
        const label = Object.keys(scores).find((name) => (left -= scores[name]!) < 0) ?? Object.keys(scores).at(-1)!
        labelled.push({ request_id, index, label })
      })
    }
    const outcome = `${res.status} ${res.headers.get('x-variant')}`
    seen[outcome] = (seen[outcome] ?? 0) + 1
  }
  return seen
}
let seed = 1

interface Named {
  name: string
  expr: string
  /** Labels every result series must carry (a panel's legend names them). */
  labels: string[]
}

/** The labels an alert's summary and runbook print. */
const templateLabels = (a: AlertRule): string[] => [...`${a.summary} ${a.runbook}`.matchAll(/\{\{ \$labels\.(\w+) \}\}/g)].map((m) => m[1]!)

const queries = (): Named[] => [
  ...panelQueries(dashboard() as unknown as DashboardView).map((q) => ({ name: `panel:${q.panel}/${q.refId}`, expr: substituteVariables(q.expr), labels: legendLabels(q.legend) })),
  ...allAlerts().map((a) => ({ name: `signal:${a.alert}`, expr: a.signal, labels: templateLabels(a) })),
  ...allRecordings().map((r) => ({ name: `record:${r.record}`, expr: r.record, labels: [] })),
]

beforeAll(async () => {
  stack = await startStack({
    backend: { MODEL_REPOSITORY: DEMO_REPOSITORY },
    keys: [...ROLLOUT_KEYS, { name: 'slow-lane', scopes: ['predict'], rate_limit_per_minute: 1 }, { name: 'labels', tenant: 'app', scopes: ['feedback'], rate_limit_per_minute: 1_000_000 }],
    worker: { FEEDBACK_MODELS: MODEL },
  })
  ;({ backend, worker } = stack)
  client = stack.keys.app!
  admin = stack.keys.ops!
  limited = stack.keys['slow-lane']!
  prometheus = await startPrometheus({
    ruleFiles: [join(RENDERED_DIR, RULES_FILE)],
    targets: [
      // The labels the ServiceMonitor's scrape gives the backend's series, which the KEDA query selects on.
      { job: BACKEND_JOB, target: hostPort(backend.url), labels: { namespace: defaultConfig.namespace, service: defaultConfig.name } },
      { job: 'edge-infer-edge', target: hostPort(worker.url), bearer: admin },
    ],
  })
}, 120_000)

afterAll(async () => {
  await prometheus?.stop()
  await stack?.stop()
})

describe('rules and dashboard against a live Prometheus', () => {
  it('the edge exposes every metric the rules and the dashboard name as the edge\'s', async () => {
    const res = await edge('/metrics', { headers: { authorization: `Bearer ${admin}` }, key: admin })
    expect(res.status).toBe(200)
    const names = exposedNames(await res.text())
    for (const name of EDGE_METRICS) expect([...names].some((n) => n === name || n === `${name}_bucket`), name).toBe(true)
  })

  it('every panel query and rule signal returns data after traffic, every rule evaluates, no alert is pending or firing', async () => {
    await putRollout({
      salt: 'observability',
      arms: [{ variant: 'stable', version: 1, weight: 50 }, { variant: 'canary', version: 2, weight: 50 }],
      canary: { variant: 'canary', baseline_variant: 'stable' },
      // The stable arm's requests also go to v2: the shadow-comparison series and rules get data.
      shadow: { version: 2, percent: 100 },
    })
    // Fewer rows per version than a drift window needs for a verdict: "insufficient", never an alert.
    expect(Object.keys(await predicts(60)).sort()).toEqual(['200 canary', '200 stable'])
    // Pinned: the metrics count them as variant="pinned" (X-Variant names the arm serving the version).
    expect(await predicts(20, { pin: 2 })).toEqual({ '200 canary': 20 })
    // Labels for more rows of v1 than the quality alerts ask for, so their signals have data.
    const labelled: FeedbackItems = []
    expect(await predicts(60, { pin: 1, labelled })).toEqual({ '200 stable': 60 })
    const feedback = await edgeClient(worker.url, { key: stack.keys.labels! }).feedback(labelled)
    expect(feedback.status).toBe(200)
    expect(new Set((feedback.body as { results: Array<{ result: string }> }).results.map((r) => r.result))).toEqual(new Set(['accepted']))
    // An input the edge fixes (a number sent as a string) is counted per key.
    expect(await predicts(1, { pin: 1, edit: (i) => ({ ...i, age: String(i.age) }) })).toEqual({ '200 stable': 1 })
    // A body the backend refuses (400: counted as a rejection) and a key over its limit at the edge (429).
    expect((await post(`${backend.url}/v2/models/${MODEL}/infer`, { inputs: [] })).status).toBe(400)
    expect(Object.keys(await predicts(2, { key: limited })).map((o) => o.split(' ')[0]).sort()).toEqual(['200', '429'])

    const all = queries()
    expect(Object.keys(EXPECTED_EMPTY).filter((name) => !all.some((q) => q.name === name)), 'stale entries of EXPECTED_EMPTY').toEqual([])
    const expectData = all.filter((q) => !(q.name in EXPECTED_EMPTY))
    const empty = async () => {
      const missing: string[] = []
      for (const q of expectData) if ((await prometheus.query(q.expr)).result.length === 0) missing.push(q.name)
      return missing
    }
    // Scrapes and rule evaluations run every second; a rate needs two samples of a series.
    await until(async () => (await empty()).length === 0, { tries: 30, everyMs: 1_000 }).catch(() => undefined)
    expect(await empty()).toEqual([])
    const variants = await prometheus.query(`count by (variant) (edge_infer_edge_requests_total{model="${MODEL}"})`)
    expect(variants.result.map((series) => series.metric.variant)).toEqual(expect.arrayContaining(['canary', 'pinned', 'stable']))

    for (const q of all) {
      const answer = await prometheus.query(q.expr)
      expect(answer.status, `${q.name}: ${answer.error}`).toBe('success')
      if (q.name in EXPECTED_EMPTY) expect(answer.result, `${q.name} is listed as empty: ${EXPECTED_EMPTY[q.name]}`).toEqual([])
      // A legend or an annotation naming a label the query drops would print nothing.
      for (const series of answer.result) for (const label of q.labels) expect(series.metric, `${q.name}: ${label}`).toHaveProperty(label)
    }

    const rules = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as { data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string; state?: string }> }> } }
    const loaded = rules.data.groups.flatMap((g) => g.rules)
    expect(loaded.length).toBe(allAlerts().length + allRecordings().length)
    expect(loaded.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`)).toEqual([])
    expect(loaded.filter((r) => r.state !== undefined && r.state !== 'inactive').map((r) => `${r.name}: ${r.state}`)).toEqual([])
  }, 180_000)
})
