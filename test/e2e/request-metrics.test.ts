import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../../edge/pipeline/auth/api-key.ts'
import { DURATION_METRIC, REQUESTS_METRIC, WEIGHT_METRIC, DECISIONS_METRIC } from '../../../../edge/pipeline/request-metrics/exposition.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../../../dev/lambda-endpoint/server.ts'
import { applicant, creditRequest } from '../../../backend/support/applicants.ts'
import { startBackend, until, type BackendProcess } from '../../../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../../../backend/support/fixture-repository.ts'
import { setProcessEnv } from '../../../support/process-env.ts'
import { startWorker, type RunningWorker } from '../../support/workerd.ts'
import { promtoolCheckMetrics } from './promtool.ts'
import { type Sample, matching, samplesOf, total } from './samples.ts'
import { expectConsistentHistograms } from './histograms.ts'

/**
 * The bundled worker in real workerd without Redis (each isolate counts its own), against the
 * real backend and the Lambda tier's local endpoint: the variant split of a canary with a
 * shadow, pinned requests, refusals, unknown model names and the fallback, read off /metrics.
 */

const MODEL = 'credit-risk'
const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let backend: BackendProcess
let endpoint: LambdaEndpoint
let worker: RunningWorker
const keys = { web: generateApiKey('test'), tight: generateApiKey('test'), ops: generateApiKey('test') }

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

const predict = (key: string | undefined, body: unknown, headers: Record<string, string> = {}, model = MODEL) =>
  fetch(`${worker.url}/v1/models/${model}/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

const scrape = async (): Promise<{ text: string; samples: Sample[] }> => {
  const res = await fetch(`${worker.url}/metrics`, { headers: { 'x-api-key': keys.ops } })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  const text = await res.text()
  return { text, samples: samplesOf(text) }
}

beforeAll(async () => {
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  const entries = [
    { name: 'web', hash: await hashApiKey(keys.web), scopes: ['predict'], rate_limit_per_minute: 6_000 },
    { name: 'tight', hash: await hashApiKey(keys.tight), scopes: ['predict'], rate_limit_per_minute: 1 },
    { name: 'ops', hash: await hashApiKey(keys.ops), scopes: ['admin'], rate_limit_per_minute: 6_000 },
  ]
  worker = await startWorker({
    BACKEND_URL: backend.url,
    API_KEYS: JSON.stringify(entries),
    MAX_BODY_BYTES: '4096',
    LAMBDA_FUNCTION: FUNCTION,
    LAMBDA_REGION: 'eu-west-1',
    LAMBDA_ENDPOINT: endpoint.url,
    AWS_ACCESS_KEY_ID: 'AKIDLOCALTEST',
    AWS_SECRET_ACCESS_KEY: 'local-secret-access-key',
  })
})

afterAll(async () => {
  await worker?.dispose()
  await backend?.stop()
  await endpoint?.close()
  restoreEnv?.()
})

describe('edge request metrics in workerd (one isolate, no Redis)', () => {
  /** What the responses said: requests per (version, variant) header. */
  const served = new Map<string, number>()
  let shadowed = 0

  it('counts a 50/50 canary split per arm, pinned requests apart, and every shadow call', async () => {
    const admin = { 'x-api-key': keys.ops }
    const url = `${worker.url}/v1/models/${MODEL}/rollout`
    const etag = (await fetch(url, { headers: admin })).headers.get('etag')!
    const rollout = {
      salt: 'metrics-test',
      arms: [{ variant: 'stable', version: 2, weight: 50 }, { variant: 'canary', version: 1, weight: 50 }],
      canary: { variant: 'canary', baseline_variant: 'stable' },
      shadow: { version: 1, percent: 100 },
    }
    const put = await fetch(url, { method: 'PUT', headers: { ...admin, 'content-type': 'application/json', 'if-match': etag }, body: JSON.stringify({ rollout }) })
    expect(put.status).toBe(200)

    for (let i = 0; i < 30; i++) {
      const res = await predict(keys.web, { instances: [instance(i)], entity: { user_id: `u-split-${i}` } })
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
      const res = await predict(keys.web, { instances: [instance(i)], entity: { user_id: `u-pin-${i}` } }, { 'x-model-version': '1' })
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
    const big = JSON.stringify({ instances: [instance(1)], pad: 'x'.repeat(8_000) })
    const answers = [
      await predict(undefined, { instances: [instance(1)] }),
      await predict(undefined, { instances: [instance(1)] }, {}, 'made-up-model-1'),
      await predict(undefined, { instances: [instance(1)] }, {}, 'made-up-model-2'),
      await predict(keys.web, { instances: [instance(1)] }, {}, 'made-up-model-3'),
      await predict(keys.web, big),
      await predict(keys.tight, { instances: [instance(1)], entity: { user_id: 'u-tight' } }),
      await predict(keys.tight, { instances: [instance(1)], entity: { user_id: 'u-tight' } }),
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
      const res = await fetch(`${worker.url}/v2/models/${MODEL}/versions/2/infer`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': keys.web }, body: JSON.stringify(creditRequest(1, i)),
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-served-by')).toBe('backend')
    }
    const after = total((await scrape()).samples, REQUESTS_METRIC, { model: MODEL, version: '2', variant: 'pinned', code: '200', served_by: 'backend' })
    expect(after - before).toBe(2)
  })

  it('counts answers from the Lambda tier as served_by="lambda"', async () => {
    await backend.stop()
    for (let i = 0; i < 2; i++) {
      const res = await predict(keys.web, { instances: [instance(i)], entity: { user_id: `u-split-${i}` } })
      expect(res.status).toBe(200)
      expect(res.headers.get('x-served-by')).toBe('lambda')
    }
    const { samples } = await scrape()
    expect(total(samples, REQUESTS_METRIC, { model: MODEL, served_by: 'lambda', code: '200' })).toBe(2)
  })
})
