import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../edge/pipeline/auth/api-key.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../dev/lambda-endpoint/server.ts'
import { startBackend, type BackendProcess } from '../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../backend/support/fixture-repository.ts'
import { applicant } from '../backend/support/applicants.ts'
import { startWorker, type RunningWorker } from './support/workerd.ts'
import { setProcessEnv } from '../support/process-env.ts'

const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let backend: BackendProcess
let endpoint: LambdaEndpoint
let worker: RunningWorker
let key: string

interface PredictBody {
  version: string
  predictions: Array<{ label: string; probability: number; scores: Record<string, number> }>
}

const instance = (i: number) => {
  const { account_age_months: _a, num_products: _n, ...request } = applicant(i)
  return request
}

const predict = () =>
  fetch(`${worker.url}/v1/models/credit-risk/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ instances: [instance(1), instance(2), instance(3)], entity: { user_id: 'u-7' } }),
  })

beforeAll(async () => {
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  key = generateApiKey('test')
  const entry = { name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 600 }
  worker = await startWorker({
    BACKEND_URL: backend.url,
    API_KEYS: JSON.stringify([entry]),
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

describe('the bundled worker in workerd with the Lambda tier (@aws-sdk/client-lambda inside workerd)', () => {
  let fromBackend: PredictBody

  it('answers from the backend while it is up (X-Served-By: backend)', async () => {
    const res = await predict()
    expect(res.status).toBe(200)
    expect(res.headers.get('x-served-by')).toBe('backend')
    fromBackend = (await res.json()) as PredictBody
    expect(fromBackend.predictions).toHaveLength(3)
    expect(endpoint.invocations()).toBe(0)
  })

  it('answers 200 through Lambda once BACKEND_URL points at a closed port, with the same predictions', async () => {
    await backend.stop()
    const before = endpoint.invocations()
    const res = await predict()
    expect(res.status).toBe(200)
    expect(res.headers.get('x-served-by')).toBe('lambda')
    const body = (await res.json()) as PredictBody
    expect(body.version).toBe(fromBackend.version)
    expect(body.predictions.map((p) => p.label)).toEqual(fromBackend.predictions.map((p) => p.label))
    body.predictions.forEach((p, i) => expect(p.probability).toBeCloseTo(fromBackend.predictions[i].probability, 6))
    expect(endpoint.invocations()).toBe(before + 1)
    // The secret never reaches the worker's logs.
    expect(worker.logs.join('\n')).not.toContain('local-secret-access-key')
  })
})
