import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { InvokeCommand, LambdaClient, ResourceNotFoundException } from '@aws-sdk/client-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../dev/lambda-endpoint/server.ts'
import { DEMO_REPOSITORY } from '../backend/support/fixture-repository.ts'
import { creditRequest } from '../backend/support/applicants.ts'
import { setProcessEnv } from '../support/process-env.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let endpoint: LambdaEndpoint
let failing: LambdaEndpoint
let seen: Array<Record<string, string | string[] | undefined>> = []

const clientFor = (url: string) =>
  new LambdaClient({ region: 'us-east-1', endpoint: url, credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, maxAttempts: 1 })

const invoke = (url: string, payload: unknown, functionName = FUNCTION) =>
  clientFor(url).send(new InvokeCommand({ FunctionName: functionName, Payload: new TextEncoder().encode(JSON.stringify(payload)) }))

const decode = (payload: Uint8Array | undefined): unknown => JSON.parse(new TextDecoder().decode(payload))

beforeAll(async () => {
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  failing = await startLambdaEndpoint({
    functionName: FUNCTION,
    handler: async (event) => {
      seen.push(event as Record<string, string>)
      throw new TypeError('cannot read the model')
    },
  })
})

afterAll(async () => {
  await failing?.close()
  await endpoint?.close()
  restoreEnv?.()
})

describe('local Lambda Invoke endpoint, through the real @aws-sdk/client-lambda', () => {
  it('runs the backend Lambda handler and answers its result (a SigV4-signed request)', async () => {
    const out = await invoke(endpoint.url, { model_name: 'credit-risk', model_version: '1', ...creditRequest(2, 0, { id: 'lambda-endpoint-1' }) })
    expect(out.StatusCode).toBe(200)
    expect(out.FunctionError).toBeUndefined()
    expect(out.ExecutedVersion).toBe('$LATEST')
    expect(out.Payload).toBeInstanceOf(Uint8Array)
    expect(decode(out.Payload)).toMatchObject({
      model_name: 'credit-risk', model_version: '1', id: 'lambda-endpoint-1',
      parameters: { batch_size: 2, batch_reason: 'single' },
      outputs: [{ name: 'probabilities', shape: [2, 2], datatype: 'FP32' }],
    })
  })

  it('reports a thrown error as a function error: 200, FunctionError Unhandled, {errorMessage, errorType}', async () => {
    const out = await invoke(failing.url, { model_name: 'credit-risk' })
    expect(out.StatusCode).toBe(200)
    expect(out.FunctionError).toBe('Unhandled')
    expect(decode(out.Payload)).toEqual({ errorMessage: 'cannot read the model', errorType: 'TypeError' })
    expect(seen.at(-1)).toEqual({ model_name: 'credit-risk' })
  })

  it('answers an unknown function with ResourceNotFoundException (404)', async () => {
    const error = await invoke(endpoint.url, { model_name: 'credit-risk' }, 'other-function').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ResourceNotFoundException)
    expect((error as ResourceNotFoundException).$metadata.httpStatusCode).toBe(404)
    expect((error as ResourceNotFoundException).message).toBe('Function not found: other-function')
  })

  it('accepts the function by ARN', async () => {
    const out = await invoke(endpoint.url, { model_name: 'credit-risk', ...creditRequest(1) }, `arn:aws:lambda:us-east-1:123456789012:function:${FUNCTION}`)
    expect(out.StatusCode).toBe(200)
    expect(out.FunctionError).toBeUndefined()
  })

  it('passes the handler\'s refusals {error, status} through as a normal result', async () => {
    const unknown = await invoke(endpoint.url, { model_name: 'nope', ...creditRequest(1) })
    expect(unknown.StatusCode).toBe(200)
    expect(unknown.FunctionError).toBeUndefined()
    expect(decode(unknown.Payload)).toEqual({ error: 'unknown model "nope"', status: 404 })
    const badShape = await invoke(endpoint.url, { model_name: 'credit-risk', inputs: [{ name: 'features', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] })
    expect(decode(badShape.Payload)).toMatchObject({ status: 400, error: expect.stringMatching(/shape/) })
  })

  it('needs no signature, and refuses a payload that is not JSON as AWS does', async () => {
    const url = `${endpoint.url}/2015-03-31/functions/${FUNCTION}/invocations`
    const unsigned = await fetch(url, { method: 'POST', body: JSON.stringify({ model_name: 'nope' }) })
    expect(unsigned.status).toBe(200)
    expect(unsigned.headers.get('x-amz-executed-version')).toBe('$LATEST')
    expect(await unsigned.json()).toEqual({ error: 'unknown model "nope"', status: 404 })
    const garbled = await fetch(url, { method: 'POST', body: '{"model_name":' })
    expect(garbled.status).toBe(400)
    expect(garbled.headers.get('x-amzn-errortype')).toBe('InvalidRequestContentException')
    expect(await garbled.json()).toMatchObject({ Type: 'User', message: expect.stringMatching(/Could not parse request body into json/) })
  })

  it("hands the handler the invocation's ClientContext as the Node runtime does, and refuses one that is not base64 JSON", async () => {
    const contexts: unknown[] = []
    const recording = await startLambdaEndpoint({ functionName: FUNCTION, handler: async (_event, context) => (contexts.push(context.clientContext), {}) })
    try {
      const custom = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }
      const ClientContext = Buffer.from(JSON.stringify({ custom })).toString('base64')
      await clientFor(recording.url).send(new InvokeCommand({ FunctionName: FUNCTION, Payload: new TextEncoder().encode('{}'), ClientContext }))
      await invoke(recording.url, {})
      expect(contexts).toEqual([{ custom }, null])
      const url = `${recording.url}/2015-03-31/functions/${FUNCTION}/invocations`
      const bad = await fetch(url, { method: 'POST', body: '{}', headers: { 'x-amz-client-context': Buffer.from('not json').toString('base64') } })
      expect(bad.status).toBe(400)
      expect(bad.headers.get('x-amzn-errortype')).toBe('InvalidParameterValueException')
      expect(contexts).toHaveLength(2)
    } finally {
      await recording.close()
    }
  })
})

describe('tsx dev/lambda-endpoint/main.ts', () => {
  it('prints {"msg":"listening","url"} and serves; SIGTERM stops it', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/lambda-endpoint/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, LAMBDA_FUNCTION: 'cli-function', LAMBDA_ENDPOINT_PORT: '0', MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = once(child, 'exit')
    try {
      const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string]
      const { msg, url } = JSON.parse(line) as { msg: string; url: string }
      expect(msg).toBe('listening')
      const out = await invoke(url, { model_name: 'credit-risk', ...creditRequest(1) }, 'cli-function')
      expect(decode(out.Payload)).toMatchObject({ model_name: 'credit-risk', outputs: [{ shape: [1, 2] }] })
    } finally {
      child.kill('SIGTERM')
    }
    const [code] = (await exited) as [number | null]
    expect(code).toBe(0)
  })
})
