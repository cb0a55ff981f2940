import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DURATION_METRIC, REQUESTS_METRIC, WEIGHT_METRIC, DECISIONS_METRIC } from '../../edge/exposition/requests.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../dev/lambda-endpoint/server.ts'
import { demoApplicant as instance } from '../../dev/demo-applicant.ts'
import { creditRequest } from '../backend/support/applicants.ts'
import { until } from '../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../backend/support/fixture-repository.ts'
import { edgeClient, type EdgeClient, type Schemas } from '../support/client.ts'
import { setProcessEnv } from '../support/process-env.ts'
import { startStack, type Stack } from '../support/stack.ts'
import { promtoolCheckMetrics } from '../edge/pipeline/request-metrics/promtool.ts'
import { type Sample, matching, samplesOf, total } from '../edge/pipeline/request-metrics/samples.ts'
import { expectConsistentHistograms } from '../edge/pipeline/request-metrics/histograms.ts'

/**
 * The bundled worker in real workerd without Redis (each isolate counts its own), against the
 * real backend and the Lambda tier's local endpoint: the variant split of a canary with a
 * shadow, pinned requests, refusals, unknown model names and the fallback, read off /metrics.
 */

const MODEL = 'credit-risk'
const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let stack: Stack
let endpoint: LambdaEndpoint
/** Clients holding each key, and one holding none. */
let web: EdgeClient
let tight: EdgeClient
let ops: EdgeClient
let anonymous: EdgeClient

const scrape = async (): Promise<{ text: string; samples: Sample[] }> => {
  const res = await fetch(`${stack.worker.url}/metrics`, { headers: { 'x-api-key': stack.keys.ops! } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  const text = await res.text()
  return { text, samples: samplesOf(text) }
}

beforeAll(async () => {
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  stack = await startStack({ keys: [
    { name: 'web', scopes: ['predict'], rate_limit_per_minute: 6_000 },
    { name: 'tight', scopes: ['predict'], rate_limit_per_minute: 1 },
    { name: 'ops', scopes: ['admin'], rate_limit_per_minute: 6_000 },
  ], worker: {
    MAX_BODY_BYTES: '4096',
    LAMBDA_FUNCTION: FUNCTION,
    LAMBDA_REGION: 'eu-west-1',
    LAMBDA_ENDPOINT: endpoint.url,
    AWS_ACCESS_KEY_ID: 'AKIDLOCALTEST',
    AWS_SECRET_ACCESS_KEY: 'local-secret-access-key',
  } })
  ;[web, tight, ops] = ['web', 'tight', 'ops'].map((name) => edgeClient(stack.worker.url, { key: stack.keys[name]! }))
  anonymous = edgeClient(stack.worker.url)
})

afterAll(async () => {
  await stack?.stop()
  await endpoint?.close()
  restoreEnv?.()
})

describe('edge request metrics in workerd (one isolate, no Redis)', () => {
  /** What the responses said: requests per (version, variant) header. */
  const served = new Map<string, number>()
  let shadowed = 0

  it('counts a 50/50 canary split per arm, pinned requests apart, and every shadow call', async () => {
    const etag = (await ops.rollout.get(MODEL)).headers.get('etag')!
    const rollout = {
      salt: 'metrics-test',
      arms: [{ variant: 'stable', version: 2, weight: 50 }, { variant: 'canary', version: 1, weight: 50 }],
      canary: { variant: 'canary', baseline_variant: 'stable' },
      shadow: { version: 1, percent: 100 },
    }
    const put = await ops.rollout.put({ rollout }, etag, MODEL)
    expect(put.status).toBe(200)

    for (let i = 0; i < 30; i++) {
      const res = await web.predict([instance(i)], { entity: { user_id: `u-split-${i}` } })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-served-by')).toBe('backend')
      const key = `${res.headers.get('x-model-version')} ${res.headers.get('x-variant')}`
      served.set(key, (served.get(key) ?? 0) + 1)
    }
    // Both arms got traffic: the split is there to be seen.
    expect(served.get('2 stable')).toBeGreaterThan(0)
    expect(served.get('1 canary')).toBeGreaterThan(0)
    shadowed = served.get('2 stable')!
    for (let i = 0; i < 3; i++) {
      const res = await web.predict([instance(i)], { entity: { user_id: `u-pin-${i}` }, version: 1 })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-variant')).toBe('canary')
    }

    const base = { model: MODEL, status_class: '2xx', code: '200', served_by: 'backend' }
    // The shadow copies run after their responses: wait (bounded) until all have been counted.
    await until(async () => total((await scrape()).samples, REQUESTS_METRIC, { variant: 'shadow' }) === shadowed, { tries: 100, everyMs: 100 })
    const { samples } = await scrape()
    expect(total(samples, REQUESTS_METRIC, { ...base, version: '2', variant: 'stable' })).toBe(served.get('2 stable'))
    expect(total(samples, REQUESTS_METRIC, { ...base, version: '1', variant: 'canary' })).toBe(served.get('1 canary'))
    expect(total(samples, REQUESTS_METRIC, { ...base, version: '1', variant: 'pinned' })).toBe(3)
    // Every stable request was copied to version 1 (100%); a canary request is already on it.
    expect(total(samples, REQUESTS_METRIC, { ...base, version: '1', variant: 'shadow' })).toBe(shadowed)
    expect(total(samples, DURATION_METRIC + '_count', { model: MODEL, version: '1', variant: 'shadow' })).toBe(shadowed)

    expect(matching(samples, WEIGHT_METRIC, { model: MODEL }).map((s) => [s.labels.arm, s.labels.version, s.value]).sort()).toEqual([['canary', '1', 50], ['stable', '2', 50]])
    expect(total(samples, DECISIONS_METRIC, { model: MODEL, action: 'manual' })).toBe(1)
  })

  it('counts refusals as answered by the edge, and collapses model names the catalog never described', async () => {
    // Over MAX_BODY_BYTES with a field the document does not have: sent raw.
    const big = JSON.stringify({ instances: [instance(1)], pad: 'x'.repeat(8_000) })
    const answers = [
      await anonymous.predict([instance(1)]),
      await anonymous.predict([instance(1)], { model: 'made-up-model-1' }),
      await anonymous.predict([instance(1)], { model: 'made-up-model-2' }),
      await web.predict([instance(1)], { model: 'made-up-model-3' }),
      await fetch(`${stack.worker.url}/v1/models/${MODEL}/predict`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': stack.keys.web! }, body: big }),
      await tight.predict([instance(1)], { entity: { user_id: 'u-tight' } }),
      await tight.predict([instance(1)], { entity: { user_id: 'u-tight' } }),
    ]
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 404, 413, 200, 429])
    const { samples } = await scrape()
    const edge = { served_by: 'edge', version: 'none', variant: 'none' }
    expect(total(samples, REQUESTS_METRIC, { ...edge, model: MODEL, code: '401', status_class: '4xx' })).toBe(1)
    expect(total(samples, REQUESTS_METRIC, { ...edge, model: 'other', code: '401' })).toBe(2)
    expect(total(samples, REQUESTS_METRIC, { ...edge, model: 'other', code: '404' })).toBe(1)
    expect(total(samples, REQUESTS_METRIC, { ...edge, model: MODEL, code: '413' })).toBe(1)
    expect(total(samples, REQUESTS_METRIC, { ...edge, model: MODEL, code: '429' })).toBe(1)
    // The scrapes themselves: no model, answered by the edge.
    expect(total(samples, REQUESTS_METRIC, { ...edge, model: 'none', code: '200' })).toBeGreaterThan(0)
    const models = new Set(matching(samples, REQUESTS_METRIC).map((s) => s.labels.model))
    expect([...models].sort()).toEqual([MODEL, 'none', 'other'])
    expect(matching(samples, REQUESTS_METRIC).every((s) => s.labels.status_class === `${s.labels.code[0]}xx`)).toBe(true)
  })

  it('keeps each duration histogram cumulative, with +Inf equal to _count and _count to the requests counted', async () => {
    const { samples } = await scrape()
    expectConsistentHistograms(samples)
  })

  it('passes promtool check metrics with no finding', async () => {
    expect(await promtoolCheckMetrics((await scrape()).text)).toEqual({ code: 0, findings: '' })
  })

  it('counts tensor requests on the Open Inference Protocol route as served by the backend', async () => {
    const before = total((await scrape()).samples, REQUESTS_METRIC, { model: MODEL, version: '2', variant: 'pinned', code: '200', served_by: 'backend' })
    for (let i = 0; i < 2; i++) {
      const res = await web.predictTensor(creditRequest(1, i) as Schemas['InferRequest'], { model: MODEL, version: 2 })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-served-by')).toBe('backend')
    }
    const after = total((await scrape()).samples, REQUESTS_METRIC, { model: MODEL, version: '2', variant: 'pinned', code: '200', served_by: 'backend' })
    expect(after - before).toBe(2)
  })

  it('counts answers from the Lambda tier as served_by="lambda"', async () => {
    await stack.backend.stop()
    for (let i = 0; i < 2; i++) {
      const res = await web.predict([instance(i)], { entity: { user_id: `u-split-${i}` } })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-served-by')).toBe('lambda')
    }
    const { samples } = await scrape()
    expect(total(samples, REQUESTS_METRIC, { model: MODEL, served_by: 'lambda', code: '200' })).toBe(2)
  })
})
