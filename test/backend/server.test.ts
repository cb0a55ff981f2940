import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBackend, post, type BackendProcess } from './support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from './support/fixture-repository.ts'
import { CREDIT_WIDTH, creditRequest } from './support/applicants.ts'

const ADMIN_TOKEN = 'test-admin-token-0123456789'
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
let repo: FixtureRepository
let backend: BackendProcess
let url: string

interface Infer {
  model_name: string
  model_version: string
  id: string
  parameters: { queue_us: number; compute_us: number; batch_size: number; batch_reason: string }
  outputs: Array<{ name: string; shape: number[]; datatype: string; data: number[] }>
}

const get = async (path: string) => {
  const res = await fetch(`${url}${path}`)
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> }
}

const index = async () => (await post<Array<{ name: string; version: string; state: string; reason: string }>>(`${url}/v2/repository/index`, {}, admin)).body

beforeAll(async () => {
  repo = await createFixtureRepository()
  await repo.addModel('tiny')
  await repo.addModel('with-feedback', { config: (config) => (config.feedback = { ttl_seconds: 600, labels: ['no', 'yes'] }) })
  backend = await startBackend({ MODEL_REPOSITORY: repo.root, ADMIN_TOKEN, INSTANCE_ID: 'server-test-7' })
  url = backend.url
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

describe('health and server metadata', () => {
  it('is live and, with the pinned demo model warm, ready; both answers name the instance', async () => {
    expect(await get('/v2/health/live')).toMatchObject({ status: 200, body: { live: true, instance_id: 'server-test-7' } })
    expect(await get('/v2/health/ready')).toMatchObject({ status: 200, body: { ready: true, instance_id: 'server-test-7' } })
  })

  it('describes itself and its extensions', async () => {
    const { body } = await get('/v2')
    expect(body).toMatchObject({ name: 'edge-infer-backend' })
    expect(body.extensions).toEqual(expect.arrayContaining(['model_repository', 'statistics']))
  })
})

describe('model metadata and readiness', () => {
  it('serves metadata with a variable batch dimension, the feature spec and the active provider', async () => {
    const { status, body } = await get('/v2/models/credit-risk')
    expect(status).toBe(200)
    expect(body).toMatchObject({
      name: 'credit-risk',
      versions: ['1', '2'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, CREDIT_WIDTH] }],
      outputs: [{ name: 'probabilities', datatype: 'FP32', shape: [-1, 2] }],
      parameters: { version: '2', execution_provider: 'cpu', max_batch_size: 64 },
      postprocess: { labels: ['low_risk', 'high_risk'] },
    })
    expect((body.features as { features: unknown[] }).features.length).toBeGreaterThan(10)
  })

  it('carries the config\'s feedback block (the edge\'s opt-in), and none for a model without one', async () => {
    expect((await get('/v2/models/with-feedback')).body.feedback).toEqual({ ttl_seconds: 600, labels: ['no', 'yes'] })
    expect((await get('/v2/models/credit-risk')).body).not.toHaveProperty('feedback')
  })

  it('serves the metadata of a named version', async () => {
    const { body } = await get('/v2/models/credit-risk/versions/1')
    expect(body).toMatchObject({ name: 'credit-risk', parameters: { version: '1' } })
    expect(body.versions).toBeUndefined()
  })

  it('reports model and version readiness', async () => {
    expect(await get('/v2/models/credit-risk/ready')).toMatchObject({ status: 200, body: { ready: true } })
    expect(await get('/v2/models/credit-risk/versions/1/ready')).toMatchObject({ status: 200, body: { ready: true } })
    expect((await get('/v2/models/credit-risk/versions/7/ready')).status).toBe(404)
    expect((await get('/v2/models/nope/ready')).status).toBe(404)
  })
})

describe('inference', () => {
  it('answers the newest version by default, echoes the id and explains the batch', async () => {
    const res = await post<Infer>(`${url}/v2/models/credit-risk/infer`, creditRequest(3, 0, { id: 'req-42' }))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-model-version')).toBe('2')
    expect(res.body).toMatchObject({ model_name: 'credit-risk', model_version: '2', id: 'req-42' })
    expect(['idle', 'full', 'delay', 'preferred']).toContain(res.body.parameters.batch_reason)
    expect(res.body.parameters.batch_size).toBeGreaterThanOrEqual(3)
    expect(res.body.parameters.compute_us).toBeGreaterThan(0)
    const [out] = res.body.outputs
    expect(out).toMatchObject({ name: 'probabilities', shape: [3, 2], datatype: 'FP32' })
    for (let r = 0; r < 3; r++) expect(out.data[2 * r] + out.data[2 * r + 1]).toBeCloseTo(1, 5)
  })

  it('serves a pinned version, which answers differently from the newest', async () => {
    const v1 = await post<Infer>(`${url}/v2/models/credit-risk/versions/1/infer`, creditRequest(4))
    const v2 = await post<Infer>(`${url}/v2/models/credit-risk/versions/2/infer`, creditRequest(4))
    expect(v1.body.model_version).toBe('1')
    expect(v2.body.model_version).toBe('2')
    expect(v1.body.outputs[0].data).not.toEqual(v2.body.outputs[0].data)
  })

  it('uses the X-Request-Id header as the response id when the body has none', async () => {
    const res = await post<Infer>(`${url}/v2/models/credit-risk/infer`, creditRequest(1), { 'x-request-id': 'trace-me' })
    expect(res.body.id).toBe('trace-me')
  })

  it('counts requests in the version statistics', async () => {
    const before = (await get('/v2/models/credit-risk/versions/2/stats')).body as { model_stats: Array<{ success: number; rows: number }> }
    await post(`${url}/v2/models/credit-risk/infer`, creditRequest(5))
    const after = (await get('/v2/models/credit-risk/versions/2/stats')).body as { model_stats: Array<{ success: number; rows: number; latency_us: { p50: number } }> }
    expect(after.model_stats[0].success - before.model_stats[0].success).toBe(1)
    expect(after.model_stats[0].rows - before.model_stats[0].rows).toBe(5)
    expect(after.model_stats[0].latency_us.p50).toBeGreaterThan(0)
  })

  it('exports Prometheus metrics, including the queue depth the autoscaler reads', async () => {
    const text = await (await fetch(`${url}/metrics`)).text()
    expect(text).toMatch(/edge_infer_backend_requests_total\{model="credit-risk",version="2",status="200"\} [1-9]/)
    expect(text).toMatch(/edge_infer_backend_queue_depth_rows\{model="credit-risk",version="2"\} 0/)
    expect(text).toMatch(/edge_infer_backend_queue_depth_all_rows 0/)
    expect(text).toMatch(/edge_infer_backend_execution_provider_info\{model="credit-risk",version="2",provider="cpu"\} 1/)
    expect(text).toMatch(/edge_infer_backend_batches_total\{model="credit-risk",version="2",reason="(idle|full|delay|preferred)"\}/)
    expect(text).toMatch(/edge_infer_backend_model_load_duration_seconds_count\{model="credit-risk",version="1"\} 1/)
  })
})

describe('repository API', () => {
  it('indexes every version with its state, loads a model lazily on first use', async () => {
    expect(await index()).toEqual(expect.arrayContaining([
      expect.objectContaining({ name: 'credit-risk', version: '2', state: 'READY' }),
      expect.objectContaining({ name: 'tiny', version: '1', state: 'UNAVAILABLE', reason: expect.stringMatching(/first request/) }),
    ]))
    const res = await post<Infer>(`${url}/v2/models/tiny/infer`, { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] })
    expect(res.status).toBe(200)
    expect(await index()).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'tiny', version: '1', state: 'READY' })]))
  })

  it('filters the index to ready models on request', async () => {
    const ready = (await post<Array<{ state: string }>>(`${url}/v2/repository/index`, { ready: true }, admin)).body
    expect(ready.length).toBeGreaterThan(0)
    expect(ready.every((e) => e.state === 'READY')).toBe(true)
  })

  it('unloads a model (then refuses it with 503) and loads it again', async () => {
    const body = { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data: [1, 2, 3, 4] }] }
    const providerLine = /^edge_infer_backend_execution_provider_info\{[^}]*model="tiny"[^}]*\} 1$/m
    const metrics = async () => (await fetch(`${url}/metrics`)).text()
    expect((await post(`${url}/v2/models/tiny/infer`, body)).status).toBe(200)
    expect(await metrics()).toMatch(providerLine)
    expect((await post(`${url}/v2/repository/models/tiny/unload`, '', admin)).status).toBe(200)
    expect(await index()).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'tiny', state: 'UNAVAILABLE', reason: 'unloaded' })]))
    // The provider gauge goes with the version (it stayed at 1: its label was read after the sessions closed).
    expect(await metrics()).not.toMatch(providerLine)
    const refused = await post(`${url}/v2/models/tiny/infer`, body)
    expect(refused.status).toBe(503)
    expect(refused.body.error).toMatch(/unloaded/)
    expect((await post(`${url}/v2/repository/models/tiny/load`, '', admin)).status).toBe(200)
    expect((await post(`${url}/v2/models/tiny/infer`, body)).status).toBe(200)
  })
})
