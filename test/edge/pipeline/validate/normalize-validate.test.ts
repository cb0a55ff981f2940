import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { FeatureSpec } from '../../../../shared/feature-spec.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { normalize } from '../../../../edge/pipeline/normalize/index.ts'
import { requestId } from '../../../../edge/pipeline/request-id/index.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { validate } from '../../../../edge/pipeline/validate/index.ts'
import { onError } from '../../../../edge/on-error.ts'
import { Problem, type ProblemBody } from '../../../../edge/problem.ts'
import { createSchemaCache } from '../../../../edge/pipeline/validate/compile-spec.ts'
import { givenIsolate, givenModels } from '../../support/isolate.ts'
import { applicant, creditRisk } from './fixtures.ts'

const makeApp = ({ maxInstances = 8, cache = createSchemaCache() } = {}) => {
  const app = new Hono<AppEnv>()
  app.use('*', givenIsolate({ validators: cache }, { MAX_INSTANCES: String(maxInstances) }), requestId(), requireJson())
  app.post('/v1/models/:model/predict', givenModels({ 'credit-risk': creditRisk }), normalize(), validate(), (c) =>
    c.json({ predict: c.get('predict'), fixes: c.get('normalizedFixes') }),
  )
  app.onError(onError)
  return { app, cache }
}
const { app } = makeApp()

const post = (body: unknown, { raw = false, model = 'credit-risk', on = app } = {}) =>
  on.request(`/v1/models/${model}/predict`, {
    method: 'POST',
    body: raw ? (body as string) : JSON.stringify(body),
    headers: { 'content-type': 'application/json', 'x-request-id': 'req-00000001' },
  })
const entity = { user_id: 'u-42' }
const problemOf = async (res: Response) => (await res.json()) as ProblemBody

describe('normalize and validate middlewares', () => {
  it('passes a valid request on as predict, with X-Input-Normalized: 0', async () => {
    const body = { instances: [applicant(), { ...applicant(), region: 'atlantis' }], entity }
    const res = await post(body)
    expect(res.status).toBe(200)
    expect(res.headers.get('x-input-normalized')).toBe('0')
    expect(await problemOf(res)).toEqual({ predict: body, fixes: 0 })
  })

  it('counts fixes in the header and hands on the repaired body', async () => {
    const res = await post({ instances: [{ ...applicant(), age: '42', region: '\uFEFF north ', housing: 'r%65nt' }], entity: { user_id: 'u%252B1' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-input-normalized')).toBe('5') // numeric string, BOM + whitespace, percent-decoding ×2
    expect(await problemOf(res)).toEqual({
      predict: { instances: [{ ...applicant(), age: 42, region: 'north', housing: 'rent' }], entity: { user_id: 'u+1' } },
      fixes: 5,
    })
  })

  it('trims whitespace that was percent-encoded, as it trims whitespace sent as is, and counts both', async () => {
    const res = await post({ instances: [{ ...applicant(), region: 'north%20' }, { ...applicant(), region: ' north' }], entity })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-input-normalized')).toBe('3') // percent-decoding + whitespace, whitespace
    expect(await problemOf(res)).toEqual({ predict: { instances: [applicant(), applicant()], entity }, fixes: 3 })
  })

  it('refuses malformed JSON with 400 and the parse position', async () => {
    const res = await post('{"instances": [ {"age": 41,} ]}', { raw: true })
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await problemOf(res)).toEqual({
      type: 'https://edge-infer.dev/problems/malformed-json', title: 'Bad Request', status: 400,
      detail: 'the request body is not valid JSON: unexpected character "}", expected a property name in double quotes at line 1, column 28 (position 27)',
      instance: '/v1/models/credit-risk/predict', request_id: 'req-00000001',
    })
  })

  it('refuses an empty body with 400', async () => {
    const res = await post('', { raw: true })
    expect(res.status).toBe(400)
    expect((await problemOf(res)).detail).toMatch(/the body is empty at line 1, column 1 \(position 0\)/)
  })

  it('accepts a body with a leading BOM', async () => {
    const res = await post(`\uFEFF${JSON.stringify({ instances: [applicant()], entity })}`, { raw: true })
    expect(res.status).toBe(200)
  })

  it('refuses a double-encoded body with 400 and a clear detail', async () => {
    const res = await post(JSON.stringify({ instances: [applicant()], entity }))
    expect(res.status).toBe(400)
    expect(await problemOf(res)).toMatchObject({ type: 'https://edge-infer.dev/problems/double-encoded-body', detail: expect.stringMatching(/encoded twice/), errors: [{ path: '' }] })
  })

  it('refuses an ambiguous value with 400 naming the field', async () => {
    const res = await post({ instances: [applicant(), { ...applicant(), housing: '50%off' }], entity })
    expect(res.status).toBe(400)
    expect(await problemOf(res)).toMatchObject({
      type: 'https://edge-infer.dev/problems/ambiguous-input',
      errors: [{ path: 'instances[1].housing', message: expect.stringContaining('"%"') }],
    })
  })

  it('refuses invalid input with 400 and every error, and still reports the fixes', async () => {
    const res = await post({
      instances: [{ ...applicant(), age: '17.5', has_default_history: 'true' }, { ...applicant(), income: 'NaN', colour: 'red' }, { ...applicant(), num_products: 2 }],
      entity: { user_id: ' u-42 ', account: 'a' },
    })
    expect(res.status).toBe(400)
    expect(res.headers.get('x-input-normalized')).toBe('2') // "17.5" → 17.5, " u-42 " trimmed
    expect(res.headers.get('x-request-id')).toBe('req-00000001')
    expect(await problemOf(res)).toEqual({
      type: 'https://edge-infer.dev/problems/invalid-input', title: 'Bad Request', status: 400,
      detail: 'the request does not match the feature spec of credit-risk: 6 errors',
      instance: '/v1/models/credit-risk/predict', request_id: 'req-00000001',
      errors: [
        { path: 'instances[0].age', message: 'must be an integer between 18 and 100, got 17.5' },
        { path: 'instances[0].has_default_history', message: 'must be a JSON boolean (true or false), got "true"' },
        { path: 'instances[1].income', message: 'must be a number between 0 and 5000000, got "NaN"' },
        { path: 'instances[1].colour', message: 'is not a feature of this model' },
        { path: 'instances[2].num_products', message: 'comes from the user entity (by user_id) and may not be sent in the request' },
        { path: 'entity.account', message: 'is not an entity key of this model (expected user_id)' },
      ],
    })
  })

  it('refuses a missing entity id when entity features cannot come from the request', async () => {
    const res = await post({ instances: [applicant()] })
    expect(res.status).toBe(400)
    expect((await problemOf(res)).errors).toEqual([{ path: 'entity.user_id', message: 'is required: account_age_months, num_products come from the user entity' }])
  })

  it.each([
    ['Infinity', 'instances[0].income', 'must be a number between 0 and 5000000, got "Infinity"'],
    ['1e999', 'instances[0].income', 'must be a number between 0 and 5000000, got "1e999"'],
    ['0x10', 'instances[0].income', 'must be a number between 0 and 5000000, got "0x10"'],
    [' 4 2', 'instances[0].income', 'must be a number between 0 and 5000000, got " 4 2"'],
    ['', 'instances[0].income', 'must be a number between 0 and 5000000, got ""'],
  ])('refuses the numeric string %j end to end', async (value, path, message) => {
    const res = await post({ instances: [{ ...applicant(), income: value }], entity })
    expect(res.status).toBe(400)
    expect((await problemOf(res)).errors).toEqual([{ path, message }])
  })

  it('refuses zero and too many instances (configurable maximum)', async () => {
    const zero = await post({ instances: [], entity })
    expect(zero.status).toBe(400)
    expect((await problemOf(zero)).errors).toEqual([{ path: 'instances', message: 'must contain at least one instance' }])
    const many = await post({ instances: Array.from({ length: 9 }, applicant), entity })
    expect(many.status).toBe(400)
    expect((await problemOf(many)).errors).toEqual([{ path: 'instances', message: 'must contain at most 8 instances, got 9' }])
    expect((await post({ instances: Array.from({ length: 8 }, applicant), entity })).status).toBe(200)
  })

  it('lists at most 50 errors while the detail counts them all', async () => {
    const { app: big } = makeApp({ maxInstances: 64 })
    const res = await post({ instances: Array.from({ length: 30 }, () => ({ ...applicant(), age: 1, income: -1 })), entity }, { on: big })
    expect(res.status).toBe(400)
    const problem = await problemOf(res)
    expect(problem.errors).toHaveLength(50)
    expect(problem.errors?.[49]).toEqual({ path: 'instances[24].income', message: 'must be a number between 0 and 5000000, got -1' })
    expect(problem.detail).toBe('the request does not match the feature spec of credit-risk: 60 errors (the first 50 are listed)')
  })

  it('answers an unknown model with the problem specFor throws', async () => {
    const res = await post({ instances: [applicant()], entity }, { model: 'nope' })
    expect(res.status).toBe(404)
    expect(await problemOf(res)).toMatchObject({ title: 'Not Found', detail: 'no model named "nope"' })
  })

  it('compiles the spec once across requests', async () => {
    const { app: counted, cache } = makeApp()
    for (let i = 0; i < 3; i++) expect((await post({ instances: [applicant()], entity }, { on: counted })).status).toBe(200)
    expect(cache.compiles).toBe(1)
  })
})
