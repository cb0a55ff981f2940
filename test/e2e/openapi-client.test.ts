import createClient from 'openapi-fetch'
import { ProblemError, createClient as createEdgeInferClient } from '../../clients/typescript/src/index.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { responseSchemas } from '../../edge/openapi.ts'
import { creditRequest } from '../backend/support/applicants.ts'
import type { RunningWorker } from '../edge/support/workerd.ts'
import type { components, paths } from '../../clients/typescript/src/schema.ts'
import { startStack, type Stack } from '../support/stack.ts'

/**
 * The client openapi-typescript generates from the document (clients/typescript/src/schema.ts), driven by
 * openapi-fetch against the worker bundled as deployed, in workerd, in front of the real backend.
 * Each answer is also parsed with the zod schema its response is documented with, so a field
 * the worker sends that the document lacks (or one it lacks that the document requires) fails.
 * The client package (clients/typescript/) is held to the same: what its calls answer is the documented body.
 */

const MODEL = 'credit-risk'
// The README's quick start request.
const APPLICANT = {
  age: 34, income: 52000, debt_ratio: 0.35, credit_utilization: 0.4, credit_lines: 4, months_employed: 30, loan_amount: 12000,
  loan_term_months: 36, num_late_payments: 1, region: 'north', housing: 'rent', has_default_history: false,
}

let stack: Stack
let worker: RunningWorker
const keys = { predict: '', admin: '' }
const clientFor = (key: string) => createClient<paths>({ baseUrl: worker.url, headers: { 'x-api-key': key } })
let caller: ReturnType<typeof clientFor>
let admin: ReturnType<typeof clientFor>

beforeAll(async () => {
  stack = await startStack({ keys: [
    { name: 'web', scopes: ['predict'], rate_limit_per_minute: 600 },
    { name: 'ops', scopes: ['predict', 'admin'], rate_limit_per_minute: 600 },
  ] })
  worker = stack.worker
  keys.predict = stack.keys.web!
  keys.admin = stack.keys.ops!
  caller = clientFor(keys.predict)
  admin = clientFor(keys.admin)
}, 120_000)

afterAll(async () => {
  await stack?.stop()
})

/**
 * The body as the document's schema for it reads it: parsing must succeed, and give back the
 * body unchanged (a plain object schema drops fields it does not name, so an undocumented one
 * would show here).
 */
const expectDocumented = <S extends z.ZodType>(schema: S, body: unknown): z.output<S> => {
  const parsed = schema.safeParse(body)
  expect(parsed.error?.issues ?? [], JSON.stringify(body)).toEqual([])
  expect(parsed.data).toEqual(body)
  return parsed.data as z.output<S>
}

const expectProblem = (response: Response, status: number, body: unknown, schema: z.ZodType = responseSchemas.Problem) => {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toBe('application/problem+json')
  const problem = expectDocumented(schema, body) as components['schemas']['Problem']
  expect(problem.status).toBe(status)
  return problem
}

const expectRateLimited = (response: Response) => {
  for (const name of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) expect(response.headers.get(name), name).toMatch(/^\d+$/)
  expect(response.headers.get('x-request-id')).toBeTruthy()
}

describe('predict through the generated client', () => {
  it('answers the typed prediction, with the documented headers', async () => {
    const { data, error, response } = await caller.POST('/v1/models/{model}/predict', {
      params: { path: { model: MODEL }, header: { 'X-Experiment-Key': 'openapi-client' } },
      body: { instances: [APPLICANT], entity: { user_id: 'u-1' } },
    })
    expect(error).toBeUndefined()
    expect(response.status).toBe(200)
    const body: components['schemas']['PredictResponse'] = expectDocumented(responseSchemas.PredictResponse, data)
    expect(body.model).toBe(MODEL)
    expect(body.predictions).toHaveLength(1)
    const [prediction] = body.predictions
    expect(['low_risk', 'high_risk']).toContain(prediction.label)
    expect(prediction.scores.low_risk + prediction.scores.high_risk).toBeCloseTo(1, 5)
    expect(response.headers.get('x-model-version')).toBe(body.version)
    expect(response.headers.get('x-variant')).toBe(body.variant)
    expectRateLimited(response)
  })

  it('refuses a body without instances with a 400 problem and field errors', async () => {
    const { data, error, response } = await caller.POST('/v1/models/{model}/predict', {
      params: { path: { model: MODEL } },
      body: { instances: [] },
    })
    expect(data).toBeUndefined()
    const problem = expectProblem(response, 400, error)
    expect(problem.errors?.map((e) => e.path)).toContain('instances')
  })

  it('refuses a request without a key with a 401 problem and a Bearer challenge', async () => {
    const anonymous = createClient<paths>({ baseUrl: worker.url })
    const { error, response } = await anonymous.GET('/v1/models')
    expectProblem(response, 401, error)
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm=/)
  })
})

describe('the catalog through the generated client', () => {
  it('lists the models a client may call', async () => {
    const { data, response } = await caller.GET('/v1/models')
    expect(response.status).toBe(200)
    const list = expectDocumented(responseSchemas.ModelList, data)
    expect(list.models).toContainEqual({ name: MODEL, href: `/v1/models/${MODEL}` })
    expectRateLimited(response)
  })

  it('describes a model: versions, features, labels and rollout arms', async () => {
    const { data, response } = await caller.GET('/v1/models/{model}', { params: { path: { model: MODEL } } })
    expect(response.status).toBe(200)
    const model: components['schemas']['ModelDescription'] = expectDocumented(responseSchemas.ModelDescription, data)
    expect(model.versions).toEqual(['1', '2'])
    expect(model.labels).toEqual(['low_risk', 'high_risk'])
    expect(model.features?.map((f) => f.name)).toEqual(expect.arrayContaining(Object.keys(APPLICANT)))
    expect(model.rollout.arms).toEqual([{ variant: 'stable', version: 2, weight: 100 }])
  })

  it('answers an unknown model with a 404 problem', async () => {
    const { error, response } = await caller.GET('/v1/models/{model}', { params: { path: { model: 'no-such-model' } } })
    expectProblem(response, 404, error)
  })
})

describe('the rollout API through the generated client', () => {
  it('reads with an ETag, replaces with If-Match, refuses a stale or missing If-Match, and records the change', async () => {
    const path = { model: MODEL }
    const read = await admin.GET('/v1/models/{model}/rollout', { params: { path } })
    expect(read.response.status).toBe(200)
    const state: components['schemas']['RolloutState'] = expectDocumented(responseSchemas.RolloutState, read.data)
    expect(state).toMatchObject({ model: MODEL, revision: 0, source: 'default' })
    const etag = read.response.headers.get('etag')
    expect(etag).toBe(`"r${state.revision}"`)

    const rollout = { salt: 'openapi', arms: [{ variant: 'stable', version: 2, weight: 90 }, { variant: 'canary', version: 1, weight: 10 }] }
    const put = await admin.PUT('/v1/models/{model}/rollout', { params: { path, header: { 'If-Match': etag! } }, body: rollout })
    expect(put.error).toBeUndefined()
    expect(put.response.status).toBe(200)
    const stored: components['schemas']['RolloutStored'] = expectDocumented(responseSchemas.RolloutStored, put.data)
    expect(stored).toMatchObject({ model: MODEL, revision: 1, source: 'stored', rollout: { ...rollout, pinnable: [] } })
    expect(stored.rollout.layout).toMatch(/^[01]{10000}$/)
    expect(put.response.headers.get('etag')).toBe('"r1"')

    // What a GET answers can be sent back as it is: the route reads `rollout` from it.
    const again = await admin.GET('/v1/models/{model}/rollout', { params: { path } })
    const back = await admin.PUT('/v1/models/{model}/rollout', { params: { path, header: { 'If-Match': again.response.headers.get('etag')! } }, body: again.data! })
    expect(back.response.status).toBe(200)
    expect(back.data?.revision).toBe(2)

    const stale = await admin.PUT('/v1/models/{model}/rollout', { params: { path, header: { 'If-Match': etag! } }, body: rollout })
    expect(expectProblem(stale.response, 412, stale.error).type).toBe('https://edge-infer.dev/problems/rollout-conflict')

    // The typed client cannot leave out a required header: a plain request shows what the route answers then.
    const bare = await fetch(`${worker.url}/v1/models/${MODEL}/rollout`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-api-key': keys.admin },
      body: JSON.stringify(rollout),
    })
    expect(expectProblem(bare, 428, await bare.json()).type).toBe('https://edge-infer.dev/problems/if-match-required')

    const history = await admin.GET('/v1/models/{model}/rollout/history', { params: { path, query: { limit: 10 } } })
    expect(history.response.status).toBe(200)
    const { entries } = expectDocumented(responseSchemas.RolloutHistory, history.data)
    expect(entries.map((e) => [e.action, e.revision, e.actor])).toEqual([['manual', 2, 'ops'], ['manual', 1, 'ops']])
  })

  it('refuses an invalid rollout with field errors, and a key without the admin scope with 403', async () => {
    const etag = (await admin.GET('/v1/models/{model}/rollout', { params: { path: { model: MODEL } } })).response.headers.get('etag')!
    const invalid = await admin.PUT('/v1/models/{model}/rollout', {
      params: { path: { model: MODEL }, header: { 'If-Match': etag } },
      body: { salt: 's', arms: [{ variant: 'a', version: 2, weight: 60 }] },
    })
    expect(expectProblem(invalid.response, 400, invalid.error).errors).toEqual([{ path: 'arms', message: 'weights sum to 60, not 100' }])
    const forbidden = await caller.GET('/v1/models/{model}/rollout', { params: { path: { model: MODEL } } })
    expectProblem(forbidden.response, 403, forbidden.error)
  })
})

describe('the Open Inference Protocol and probes through the generated client', () => {
  it('infers, describes and reports readiness as documented; refusals carry `error`', async () => {
    const infer = await caller.POST('/v2/models/{model}/versions/{version}/infer', {
      params: { path: { model: MODEL, version: 2 } },
      body: { id: 'openapi-1', ...creditRequest(1) } as components['schemas']['InferRequest'],
    })
    expect(infer.response.status).toBe(200)
    expect(expectDocumented(responseSchemas.InferResponse, infer.data)).toMatchObject({ model_name: MODEL, id: 'openapi-1' })

    const metadata = await caller.GET('/v2/models/{model}', { params: { path: { model: MODEL } } })
    expect(expectDocumented(responseSchemas.ModelMetadata, metadata.data).name).toBe(MODEL)
    const ready = await caller.GET('/v2/models/{model}/versions/{version}/ready', { params: { path: { model: MODEL, version: 1 } } })
    expect(expectDocumented(responseSchemas.ModelReady, ready.data).ready).toBe(true)

    const unknown = await caller.GET('/v2/models/{model}', { params: { path: { model: 'no-such-model' } } })
    const problem = expectProblem(unknown.response, 404, unknown.error, responseSchemas.OipProblem) as components['schemas']['OipProblem']
    expect(problem.error).toBe(problem.detail)

    const anonymous = createClient<paths>({ baseUrl: worker.url })
    expect(expectDocumented(responseSchemas.ServerLive, (await anonymous.GET('/v2/health/live')).data).live).toBe(true)
    expect(expectDocumented(responseSchemas.ServerReady, (await anonymous.GET('/v2/health/ready')).data).ready).toBe(true)
    expect(expectDocumented(responseSchemas.Health, (await anonymous.GET('/healthz')).data).ok).toBe(true)
  })
})

describe('the client package (clients/typescript/) against the same worker', () => {
  it('answers each call with the documented body, and a refusal as a ProblemError with the documented problem', async () => {
    const client = createEdgeInferClient({ baseUrl: worker.url, apiKey: keys.predict })
    const operator = createEdgeInferClient({ baseUrl: worker.url, apiKey: keys.admin })
    const prediction = await client.predict(MODEL, { instances: [APPLICANT], entity: { user_id: 'u-1' } }, { experimentKey: 'client-package', timeoutMs: 10_000 })
    expectDocumented(responseSchemas.PredictResponse, prediction)
    expectDocumented(responseSchemas.ModelList, await client.models.list())
    expectDocumented(responseSchemas.ModelDescription, await client.models.describe(MODEL))
    const infer = await client.predictTensor(MODEL, { id: 'client-1', ...creditRequest(1) } as components['schemas']['InferRequest'], { version: 2 })
    expect(expectDocumented(responseSchemas.InferResponse, infer)).toMatchObject({ model_name: MODEL, id: 'client-1' })

    const read = await operator.rollout.get(MODEL)
    expectDocumented(responseSchemas.RolloutState, read.state)
    expect(read.etag).toBe(`"r${read.state.revision}"`)
    const written = await operator.rollout.update(MODEL, (current) => ({ ...current.rollout, salt: 'client-package' }))
    expect(expectDocumented(responseSchemas.RolloutStored, written.state).rollout.salt).toBe('client-package')
    expect(written.etag).toBe(`"r${read.state.revision + 1}"`)

    const refusal = await client.predict(MODEL, { instances: [] }).catch((err: unknown) => err)
    expect(refusal).toBeInstanceOf(ProblemError)
    const problem = refusal as ProblemError
    expect(problem).toMatchObject({ status: 400, title: 'Bad Request', type: expect.stringMatching(/^https:\/\/edge-infer\.dev\/problems\//) })
    expect(problem.fieldPaths).toContain('instances')
  })
})
