import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { handler, shutdownLambda } from '../../backend/lambda.ts'
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
})
