import { afterEach, describe, expect, it, vi } from 'vitest'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'
import { creditRequest } from './support/applicants.ts'

type LambdaModule = typeof import('../../backend/lambda.ts')

/** A fresh import of the handler module, as the runtime's init phase does it. */
const importFresh = async (env: Record<string, string | undefined>): Promise<LambdaModule> => {
  for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v)
  vi.resetModules()
  return import('../../backend/lambda.ts')
}

let loaded: LambdaModule | undefined

afterEach(async () => {
  await loaded?.shutdownLambda()
  loaded = undefined
  vi.unstubAllEnvs()
})

describe('Lambda init phase', () => {
  it('inside Lambda, the import itself loads every model: the first invoke finds them resident', async () => {
    loaded = await importFresh({ AWS_LAMBDA_FUNCTION_NAME: 'edge-infer-test', MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
    expect(loaded.IN_LAMBDA).toBe(true)
    expect(loaded.lambdaInit).toBeInstanceOf(Promise)
    const manager = loaded.lambdaManager()
    for (const name of await manager.repository.names()) expect(manager.resident(name), name).toBeDefined()
    expect(await loaded.handler({ model_name: 'credit-risk', ...creditRequest(1) })).toMatchObject({ model_name: 'credit-risk' })
  })

  it('outside Lambda, importing loads nothing until the first invoke', async () => {
    loaded = await importFresh({ AWS_LAMBDA_FUNCTION_NAME: undefined, MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
    expect(loaded.IN_LAMBDA).toBe(false)
    expect(loaded.lambdaInit).toBeUndefined()
    expect(loaded.lambdaManager().resident('credit-risk')).toBeUndefined()
  })

  it('a repository that cannot be read does not fail the init: the invoke answers the refusal', async () => {
    loaded = await importFresh({ AWS_LAMBDA_FUNCTION_NAME: 'edge-infer-test', MODEL_REPOSITORY: '/nonexistent/models', LOG_LEVEL: 'silent' })
    await expect(loaded.lambdaInit).resolves.toBeUndefined()
    expect(await loaded.handler({ model_name: 'credit-risk', ...creditRequest(1) })).toMatchObject({ status: expect.any(Number) })
  })
})
