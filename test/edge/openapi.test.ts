import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { CONSOLE_FILES } from '../../edge/console/assets.generated.ts'
import { openApiDocument, type OpenApiDocument } from '../../edge/openapi.ts'
import { openApiPath, problemStatuses } from '../../edge/openapi/document.ts'
import { oipProblem, problem } from '../../edge/openapi/schemas.ts'
import { edgeRoutes } from '../../edge/routes/index.ts'
import type { Route } from '../../edge/routes/route.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { startBackend, type BackendProcess } from '../backend/support/backend-process.ts'
import { applicant, creditRequest } from '../backend/support/applicants.ts'

const served = async (): Promise<OpenApiDocument> => (await createApp().request('/openapi.json')).json() as Promise<OpenApiDocument>
const operationsOf = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })))

describe('GET /openapi.json', () => {
  it('serves the document, built once', async () => {
    const res = await createApp().request('/openapi.json')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument())))
    expect(openApiDocument()).toBe(openApiDocument())
  })

  it('is OpenAPI 3.1 with servers, a license and both ways of sending a key', async () => {
    const doc = await served()
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.servers.map((s) => s.url)).toEqual(['https://edge-infer.example.workers.dev', 'http://127.0.0.1:8787'])
    expect(doc.info.license).toEqual({ name: expect.any(String), identifier: 'Apache-2.0' })
    expect(doc.components.securitySchemes).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Api-Key' }),
    })
  })

  it('gives each operation a unique operationId, and the probes and the console page alone need no key', async () => {
    const ops = operationsOf(await served())
    expect(ops.length).toBeGreaterThan(15)
    expect(new Set(ops.map(({ op }) => op.operationId)).size).toBe(ops.length)
    for (const { path, method, op } of ops) {
      const keyed = op.security.length > 0
      if (keyed) expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '429']))
      expect(keyed, `${method} ${path}`).toBe(!['/healthz', '/openapi.json', '/v2/health/live', '/v2/health/ready', '/console', '/console/assets/{file}'].includes(path))
    }
  })

  it('describes the bodies from the schemas the routes use', async () => {
    const { components } = await served()
    const schemas = components.schemas as Record<string, { properties?: Record<string, unknown>; required?: string[]; additionalProperties?: unknown }>
    expect(schemas.PredictRequest.required).toEqual(['instances'])
    // The PUT's schema is the route's rolloutSchema: strict, defaults optional on the way in, present on the way out.
    expect(Object.keys(schemas.RolloutInput.properties ?? {})).toEqual(['salt', 'arms', 'layout', 'pinnable', 'shadow', 'canary', 'cache'])
    expect(schemas.RolloutInput.required).toEqual(['salt', 'arms'])
    expect(schemas.RolloutInput.additionalProperties).toBe(false)
    expect(schemas.Rollout.required).toEqual(['salt', 'arms', 'pinnable'])
    expect(schemas.Problem.required).toEqual(['type', 'title', 'status', 'detail'])
    expect(schemas.OipProblem.required).toEqual(['type', 'title', 'status', 'detail', 'error'])
    // Built at module load: a default that is the time of the build would differ between deploys.
    expect(JSON.stringify(schemas.RolloutInput)).not.toMatch(/"default":1\d{12}/)
  })

  it('names the headers clients need: ETag and If-Match on the rollout, the assignment on predict, the limits', async () => {
    const doc = await served()
    const rollout = doc.paths['/v1/models/{model}/rollout']
    expect(Object.keys((rollout.get.responses['200'] as { headers: object }).headers)).toContain('ETag')
    expect(rollout.put.parameters).toContainEqual({ $ref: '#/components/parameters/IfMatch' })
    expect(Object.keys(doc.paths['/v1/models/{model}/rollout'].put.responses)).toEqual(expect.arrayContaining(['412', '428']))
    const predict = doc.paths['/v1/models/{model}/predict'].post
    expect(Object.keys((predict.responses['200'] as { headers: object }).headers)).toEqual(
      expect.arrayContaining(['X-Model-Version', 'X-Variant', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
    )
    expect(predict.parameters).toEqual(expect.arrayContaining([{ $ref: '#/components/parameters/ModelVersionPin' }, { $ref: '#/components/parameters/ExperimentKey' }]))
    const tooMany = (doc.components.responses as Record<string, { headers: object }>).Problem429
    expect(Object.keys(tooMany.headers)).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit-Reset']))
  })
})

// ---- real answers against the declarations ----------------------------------------------------

let backend: BackendProcess
let app: ReturnType<typeof createApp>
let env: Record<string, string>
const keys = { all: '', predict: '' }

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  keys.all = generateApiKey('test')
  keys.predict = generateApiKey('test')
  const store = new MemoryKeyStore([
    { name: 'ops', hash: await hashApiKey(keys.all), scopes: ['predict', 'admin', 'feedback'], rate_limit_per_minute: 100_000 },
    { name: 'web', hash: await hashApiKey(keys.predict), scopes: ['predict'], rate_limit_per_minute: 100_000 },
  ])
  app = createApp({ parts: { keys: store }, log: () => {} })
  env = { BACKEND_URL: backend.url, FEEDBACK_MODELS: '*' }
})

afterAll(async () => {
  await backend?.stop()
})

const routes = edgeRoutes() as ReadonlyArray<Route<never>>
const routeOf = (operationId: string): Route<never> => {
  const found = routes.find((r) => r.operationId === operationId)
  if (!found) throw new Error(`no route declares ${operationId}`)
  return found
}

/** Each operation answered with a 2xx, and each guarded or fallible one with a problem too. */
const exercised = new Map<string, Set<'answer' | 'problem'>>()

interface Call {
  method?: 'GET' | 'POST' | 'PUT'
  path: string
  key?: keyof typeof keys | 'none'
  body?: unknown
  headers?: Record<string, string>
}

/**
 * Sends a request to the declared route and checks the answer against the declaration: its status
 * is one the route declares, and its body parses with the schema declared for that status (the
 * route's own for an answer, the problem's for a problem). Answers the parsed body.
 */
const check = async (operationId: string, { method = 'GET', path, key = 'all', body, headers = {} }: Call, status: number): Promise<unknown> => {
  const route = routeOf(operationId)
  expect(method.toLowerCase(), operationId).toBe(route.method)
  const res = await app.request(path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key === 'none' ? {} : { authorization: `Bearer ${keys[key]}` }), ...headers },
  }, env)
  const where = `${operationId} ${method} ${path}`
  const text = await res.text()
  expect(res.status, `${where}: ${text.slice(0, 300)}`).toBe(status)
  expect(res.headers.get('x-request-id'), where).toBeTruthy()
  const answer = route.answers[res.status]
  const type = res.headers.get('content-type') ?? ''
  const kind = answer && !type.startsWith('application/problem+json') ? 'answer' : 'problem'
  exercised.set(operationId, (exercised.get(operationId) ?? new Set()).add(kind))
  if (kind === 'answer') {
    const declaredType = answer.type ?? 'application/json'
    expect(type.split(';')[0], where).toBe(declaredType.split(';')[0])
    const parsed = declaredType === 'application/json' ? JSON.parse(text) : text
    const result = answer.schema.safeParse(parsed)
    expect(result.success, `${where}: ${result.error?.message}`).toBe(true)
    return parsed
  }
  expect(problemStatuses(route), `${where}: ${res.status} is not declared`).toContain(res.status as never)
  expect(type, where).toMatch(/^application\/problem\+json/)
  const shape = openApiPath(route.path).startsWith('/v2/') ? oipProblem : problem
  const result = shape.safeParse(JSON.parse(text))
  expect(result.success, `${where}: ${result.error?.message}`).toBe(true)
  return JSON.parse(text)
}

const MODEL = '/v1/models/credit-risk'
const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

describe('every declared route answers as declared', () => {
  it('meta: health, this document, the console', async () => {
    await check('getHealth', { path: '/healthz', key: 'none' }, 200)
    await check('getOpenApiDocument', { path: '/openapi.json', key: 'none' }, 200)
    await check('getConsole', { path: '/console', key: 'none' }, 200)
    const script = Object.keys(CONSOLE_FILES).find((file) => file.endsWith('.js'))
    expect(script).toBeDefined()
    await check('getConsoleAsset', { path: `/console/${script}`, key: 'none' }, 200)
    await check('getConsoleAsset', { path: '/console/assets/nothing.js', key: 'none' }, 404)
  })

  it('catalog', async () => {
    await check('listModels', { path: '/v1/models' }, 200)
    await check('listModels', { path: '/v1/models', key: 'none' }, 401)
    await check('describeModel', { path: MODEL }, 200)
    await check('describeModel', { path: '/v1/models/no-such-model' }, 404)
  })

  it('predict and feedback', async () => {
    const answered = (await check('predict', { method: 'POST', path: `${MODEL}/predict`, body: { instances: [instance(0)], entity: { user_id: 'u-1' } } }, 200)) as { request_id: string; predictions: Array<{ label: string }> }
    await check('predict', { method: 'POST', path: `${MODEL}/predict`, body: { instances: [] } }, 400)
    await check('predict', { method: 'POST', path: `${MODEL}/predict`, key: 'none', body: { instances: [instance(0)] } }, 401)
    const feedback = { request_id: answered.request_id, label: answered.predictions[0].label }
    await check('postFeedback', { method: 'POST', path: '/v1/feedback', body: feedback }, 200)
    await check('postFeedback', { method: 'POST', path: '/v1/feedback', body: { label: 'x' } }, 400)
    await check('postFeedback', { method: 'POST', path: '/v1/feedback', key: 'predict', body: feedback }, 403)
  })

  it('rollout, history, drift, quality', async () => {
    const state = await check('getRollout', { path: `${MODEL}/rollout` }, 200)
    await check('getRollout', { path: `${MODEL}/rollout`, key: 'predict' }, 403)
    const etag = (await app.request(`${MODEL}/rollout`, { headers: { authorization: `Bearer ${keys.all}` } }, env)).headers.get('etag')
    await check('putRollout', { method: 'PUT', path: `${MODEL}/rollout`, body: state, headers: { 'if-match': etag ?? '' } }, 200)
    await check('putRollout', { method: 'PUT', path: `${MODEL}/rollout`, body: state }, 428)
    await check('getRolloutHistory', { path: `${MODEL}/rollout/history` }, 200)
    await check('getRolloutHistory', { path: `${MODEL}/rollout/history?limit=0` }, 400)
    // Pause and resume act on a running canary: none yet (400), then one started by PUT.
    const etagNow = async () => (await app.request(`${MODEL}/rollout`, { headers: { authorization: `Bearer ${keys.all}` } }, env)).headers.get('etag') ?? ''
    await check('pauseCanary', { method: 'POST', path: `${MODEL}/rollout/pause`, headers: { 'if-match': await etagNow() } }, 400)
    const withCanary = { salt: 'openapi', arms: [{ variant: 'stable', version: 2, weight: 99 }, { variant: 'canary', version: 1, weight: 1 }], canary: { variant: 'canary', baseline_variant: 'stable' } }
    await check('putRollout', { method: 'PUT', path: `${MODEL}/rollout`, body: withCanary, headers: { 'if-match': await etagNow() } }, 200)
    await check('pauseCanary', { method: 'POST', path: `${MODEL}/rollout/pause`, headers: { 'if-match': await etagNow() } }, 200)
    await check('resumeCanary', { method: 'POST', path: `${MODEL}/rollout/resume` }, 428)
    await check('resumeCanary', { method: 'POST', path: `${MODEL}/rollout/resume`, headers: { 'if-match': await etagNow() } }, 200)
    await check('getRolloutController', { path: '/v1/rollout/controller' }, 200)
    await check('getRolloutController', { path: '/v1/rollout/controller', key: 'predict' }, 403)
    await check('getDriftReport', { path: `${MODEL}/versions/2/drift` }, 200)
    await check('getDriftReport', { path: `${MODEL}/versions/two/drift` }, 400)
    await check('getModelQuality', { path: `${MODEL}/quality` }, 200)
    await check('getModelQuality', { path: `${MODEL}/quality?window=soon` }, 400)
  })

  it('admin: metrics and the backend\'s stats', async () => {
    await check('getMetrics', { path: '/metrics' }, 200)
    await check('getMetrics', { path: '/metrics', key: 'none' }, 401)
    await check('getBackendStats', { path: '/v1/backend/stats' }, 200)
    await check('getBackendStats', { path: '/v1/backend/stats', key: 'predict' }, 403)
  })

  it('Open Inference Protocol: infer, metadata, readiness, the edge\'s health', async () => {
    const V2 = '/v2/models/credit-risk'
    await check('infer', { method: 'POST', path: `${V2}/infer`, body: creditRequest(2) }, 200)
    await check('infer', { method: 'POST', path: `${V2}/infer`, body: { inputs: [{ name: 'features', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] } }, 400)
    await check('inferVersion', { method: 'POST', path: `${V2}/versions/1/infer`, body: creditRequest(1) }, 200)
    await check('inferVersion', { method: 'POST', path: `${V2}/versions/1/infer`, key: 'none', body: creditRequest(1) }, 401)
    await check('getModelMetadata', { path: V2 }, 200)
    await check('getModelMetadata', { path: '/v2/models/no-such-model' }, 404)
    await check('getModelVersionMetadata', { path: `${V2}/versions/2` }, 200)
    await check('getModelVersionMetadata', { path: `${V2}/versions/2`, key: 'none' }, 401)
    await check('getModelReady', { path: `${V2}/ready` }, 200)
    await check('getModelReady', { path: `${V2}/ready`, key: 'none' }, 401)
    await check('getModelVersionReady', { path: `${V2}/versions/1/ready` }, 200)
    await check('getModelVersionReady', { path: `${V2}/versions/1/ready`, key: 'none' }, 401)
    await check('getServerLive', { path: '/v2/health/live', key: 'none' }, 200)
    await check('getServerReady', { path: '/v2/health/ready', key: 'none' }, 200)
  })

  it('left no declared route unexercised: an answer from each, and a problem from each that has a key or can fail on its own', () => {
    for (const route of routes) {
      const seen = exercised.get(route.operationId) ?? new Set()
      expect(seen.has('answer'), `${route.operationId}: no answer checked`).toBe(true)
      // The probes and the pages answer from the edge alone; what they may fail with (500, 429) cannot be provoked from here.
      if (route.guard !== 'none' || route.operationId === 'getConsoleAsset') expect(seen.has('problem'), `${route.operationId}: no problem checked`).toBe(true)
    }
  })
})
