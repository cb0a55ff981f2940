import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { demoApplicant } from '../../dev/demo-applicant.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../dev/lambda-endpoint/server.ts'
import { DEMO_REPOSITORY } from '../backend/support/fixture-repository.ts'
import { edgeClient, type EdgeClient, type Schemas } from '../support/client.ts'
import { LOCAL_SECRET_ACCESS_KEY, lambdaBindings } from '../support/lambda-bindings.ts'
import { setProcessEnv } from '../support/process-env.ts'
import { startStack, type Stack } from '../support/stack.ts'

const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let stack: Stack
let endpoint: LambdaEndpoint
let edge: EdgeClient

/** Three applicants for one user, the same request each time. */
const ROWS = [demoApplicant(1), demoApplicant(2), demoApplicant(3)]
const ENTITY = { user_id: 'u-7' }

beforeAll(async () => {
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  stack = await startStack({ keys: [{ name: 'web', scopes: ['predict'], rate_limit_per_minute: 600 }], worker: lambdaBindings(FUNCTION, endpoint.url) })
  edge = edgeClient(stack.worker.url, { key: stack.keys.web! })
})

afterAll(async () => {
  await stack?.stop()
  await endpoint?.close()
  restoreEnv?.()
})

describe('the bundled worker in workerd with the Lambda tier (@aws-sdk/client-lambda inside workerd)', () => {
  let fromBackend: Schemas['PredictResponse']

  it('answers from the backend while it is up (X-Served-By: backend)', async () => {
    const res = await edge.predict(ROWS, { entity: ENTITY })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-served-by')).toBe('backend')
    fromBackend = res.body
    expect(fromBackend.predictions).toHaveLength(3)
    expect(endpoint.invocations()).toBe(0)
  })

  it('answers 200 through Lambda once BACKEND_URL points at a closed port, with the same predictions', async () => {
    await stack.backend.stop()
    const before = endpoint.invocations()
    const res = await edge.predict(ROWS, { entity: ENTITY })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-served-by')).toBe('lambda')
    const body = res.body
    expect(body.version).toBe(fromBackend.version)
    expect(body.predictions.map((p) => p.label)).toEqual(fromBackend.predictions.map((p) => p.label))
    body.predictions.forEach((p, i) => expect(p.probability).toBeCloseTo(fromBackend.predictions[i].probability, 6))
    expect(endpoint.invocations()).toBe(before + 1)
    // The secret never reaches the worker's logs.
    expect(stack.worker.logs.join('\n')).not.toContain(LOCAL_SECRET_ACCESS_KEY)
  })
})
