import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { handler, lambdaManager, shutdownLambda } from '../../backend/lambda.ts'
import { lambdaErrorResult } from '../../shared/lambda.ts'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'
import { CREDIT_WIDTH, creditRequest } from './support/applicants.ts'

const previous = process.env.MODEL_REPOSITORY

beforeAll(() => {
  process.env.MODEL_REPOSITORY = DEMO_REPOSITORY
  process.env.LOG_LEVEL = 'silent'
})

afterAll(async () => {
  await shutdownLambda()
  process.env.MODEL_REPOSITORY = previous
})

describe('Lambda handler', () => {
  it('answers an infer request for the newest version, unbatched', async () => {
    const result = await handler({ model_name: 'credit-risk', ...creditRequest(3, 0, { id: 'lambda-1' }) })
    expect(result).toMatchObject({
      model_name: 'credit-risk',
      model_version: '2',
      id: 'lambda-1',
      parameters: { batch_size: 3, batch_reason: 'single' },
      outputs: [{ name: 'probabilities', shape: [3, 2], datatype: 'FP32' }],
    })
  })

  it('serves a named version', async () => {
    expect(await handler({ model_name: 'credit-risk', model_version: '1', ...creditRequest(1) })).toMatchObject({ model_version: '1' })
  })

  it('returns refusals with their status instead of throwing', async () => {
    expect(await handler({ model_name: 'nope', ...creditRequest(1) })).toEqual({ error: 'unknown model "nope"', status: 404 })
    expect(await handler('not an object')).toMatchObject({ status: 400 })
    expect(await handler({ ...creditRequest(1) })).toMatchObject({ status: 400, error: expect.stringMatching(/model_name/) })
    const wrongShape = { model_name: 'credit-risk', inputs: [{ name: 'features', shape: [1, CREDIT_WIDTH + 1], datatype: 'FP32', data: [] }] }
    expect(await handler(wrongShape)).toMatchObject({ status: 400, error: expect.stringMatching(/shape/) })
  })

  it('refuses in the shape the edge reads: every refusal parses as a LambdaErrorResult', async () => {
    const refusals = await Promise.all([
      handler({ model_name: 'nope', ...creditRequest(1) }),
      handler([]),
      handler({ model_name: 'credit-risk', model_version: 2, ...creditRequest(1) }),
      handler({ model_name: 'credit-risk', inputs: 'none' }),
    ])
    for (const refusal of refusals) expect(lambdaErrorResult.parse(refusal)).toEqual(refusal)
  })

  it("counts each request into the version's stats, answered or refused, as the HTTP route does", async () => {
    const served = await lambdaManager().resolve('credit-risk', '1')
    const before = served.stats.snapshot()
    await handler({ model_name: 'credit-risk', model_version: '1', ...creditRequest(4) })
    await handler({ model_name: 'credit-risk', model_version: '1', inputs: [{ name: 'features', shape: [1, CREDIT_WIDTH + 1], datatype: 'FP32', data: [] }] })
    const after = served.stats.snapshot()
    expect({
      success: after.success - before.success,
      failure: after.failure - before.failure,
      rows: after.rows - before.rows,
      latencies: after.latency_us.window - before.latency_us.window,
    }).toEqual({ success: 1, failure: 1, rows: 4, latencies: 2 })
  })
})
