import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BackendProcess } from '../../backend/support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../../backend/support/fixture-repository.ts'
import type { RunningWorker } from '../support/workerd.ts'
import { startEdgeOverBackend, type EdgeOverBackend } from '../../support/stack.ts'

// The compute-bound builder writes a postprocess but no `features`: a model predict cannot serve.
const SPEC_LESS = 'spec-less'

let repository: FixtureRepository
let backend: BackendProcess
let worker: RunningWorker
let keys: EdgeOverBackend['keys']
let stop: (() => Promise<void>) | undefined

const tensors = { inputs: [{ name: 'features', shape: [2, 4], datatype: 'FP32', data: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8] }] }

const call = (method: string, path: string, { key = keys.predict, body, headers = {} }: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
  fetch(`${worker.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key ? { 'x-api-key': key } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

beforeAll(async () => {
  repository = await createFixtureRepository()
  await repository.addModel(SPEC_LESS)
  ;({ backend, worker, keys, stop } = await startEdgeOverBackend({ MODEL_REPOSITORY: repository.root }))
}, 120_000)

afterAll(async () => {
  await stop?.()
  await repository?.remove()
})

describe('Open Inference Protocol infer through the edge, for a model without a feature spec', () => {
  it('answers the tensor request, routed to the served version', async () => {
    const res = await call('POST', `/v2/models/${SPEC_LESS}/infer`, { body: { id: 'tensor-1', ...tensors } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-model-version')).toBe('1')
    const body = (await res.json()) as { model_name: string; id: string; outputs: Array<{ name: string; shape: number[] }> }
    expect(body).toMatchObject({ model_name: SPEC_LESS, id: 'tensor-1' })
    expect(body.outputs[0]).toMatchObject({ name: 'probabilities', shape: [2, 2] })
  })

  it('pins by the path version and by X-Model-Version, as for a model with a spec', async () => {
    expect((await call('POST', `/v2/models/${SPEC_LESS}/versions/1/infer`, { body: tensors })).status).toBe(200)
    expect((await call('POST', `/v2/models/${SPEC_LESS}/infer`, { body: tensors, headers: { 'x-model-version': '1' } })).status).toBe(200)
    const unserved = await call('POST', `/v2/models/${SPEC_LESS}/versions/7/infer`, { body: tensors })
    expect(unserved.status).toBe(404)
  })

  it('keeps the same auth: no key is 401, a key without the predict scope is 403', async () => {
    expect((await call('POST', `/v2/models/${SPEC_LESS}/infer`, { key: '', body: tensors })).status).toBe(401)
    expect((await call('POST', `/v2/models/${SPEC_LESS}/infer`, { key: keys.admin, body: tensors })).status).toBe(403)
  })

  it('describes the model in the catalog by its versions and labels, without features', async () => {
    const res = await call('GET', `/v1/models/${SPEC_LESS}`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toMatchObject({ name: SPEC_LESS, versions: ['1'], labels: ['class_0', 'class_1'] })
    expect(body).not.toHaveProperty('features')
  })

  it('refuses predict for it with a problem naming the infer route', async () => {
    const res = await call('POST', `/v1/models/${SPEC_LESS}/predict`, { body: { instances: [{ x: 1 }] } })
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    const body = (await res.json()) as { type: string; detail: string }
    expect(body.type).toMatch(/\/no-feature-spec$/)
    expect(body.detail).toContain(`/v2/models/${SPEC_LESS}/infer`)
  })
})

describe('Open Inference Protocol metadata, readiness and health through the edge', () => {
  it('passes model metadata on as the backend answers it, with and without a version', async () => {
    for (const path of [`/v2/models/${SPEC_LESS}`, `/v2/models/${SPEC_LESS}/versions/1`, '/v2/models/credit-risk/versions/2']) {
      const [viaEdge, direct] = await Promise.all([call('GET', path), fetch(`${backend.url}${path}`)])
      expect(viaEdge.status, path).toBe(200)
      expect(await viaEdge.json(), path).toEqual(await direct.json())
    }
  })

  it('passes model readiness on, with and without a version', async () => {
    for (const path of [`/v2/models/${SPEC_LESS}/ready`, '/v2/models/credit-risk/versions/1/ready']) {
      const res = await call('GET', path)
      expect(res.status, path).toBe(200)
      expect(await res.json(), path).toMatchObject({ ready: true })
    }
  })

  it('needs the predict scope for model metadata and readiness', async () => {
    for (const path of [`/v2/models/${SPEC_LESS}`, `/v2/models/${SPEC_LESS}/versions/1/ready`]) {
      expect((await call('GET', path, { key: '' })).status, path).toBe(401)
      expect((await call('GET', path, { key: keys.admin })).status, path).toBe(403)
    }
  })

  it('answers health without a key, from the edge itself: the backend\'s instance is not named', async () => {
    const answers = await Promise.all(['/v2/health/live', '/v2/health/ready'].map(async (path) => {
      const res = await call('GET', path, { key: '' })
      return [res.status, await res.json()]
    }))
    expect(answers).toEqual([[200, { live: true }], [200, { ready: true }]])
  })

  it('maps an unknown model to a 404 problem that carries the protocol\'s error member', async () => {
    const res = await call('GET', '/v2/models/no-such-model')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    const body = (await res.json()) as { status: number; error: string }
    expect(body.status).toBe(404)
    expect(body.error).toMatch(/^inference tier: .*no-such-model/)
  })

  it('leaves unknown models and malformed versions to the backend: its status, as a problem', async () => {
    for (const path of ['/v2/models/no-such-model/versions/3/ready', `/v2/models/${SPEC_LESS}/versions/abc`, `/v2/models/${SPEC_LESS}/versions/9`]) {
      const [viaEdge, direct] = await Promise.all([call('GET', path), fetch(`${backend.url}${path}`)])
      expect(direct.status, path).toBeGreaterThanOrEqual(400)
      expect(viaEdge.status, path).toBe(direct.status)
      expect(viaEdge.headers.get('content-type'), path).toMatch(/^application\/problem\+json/)
    }
  })
})

describe('a wrong method through the bundled worker', () => {
  it('is 405 with Allow and a problem body, not 404', async () => {
    const res = await call('GET', `/v2/models/${SPEC_LESS}/infer`)
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST')
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(await res.json()).toMatchObject({ status: 405, title: 'Method Not Allowed' })
  })
})
