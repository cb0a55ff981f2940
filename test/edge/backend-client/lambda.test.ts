import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BackendRefusal } from '../../../edge/backend-client/http.ts'
import { LambdaTransport } from '../../../edge/backend-client/lambda.ts'
import { Problem } from '../../../edge/problem.ts'
import { lambdaInferEvent } from '../../../shared/lambda.ts'
import { startLambdaEndpoint, type LambdaEndpoint } from '../../../dev/lambda-endpoint/server.ts'
import { DEMO_REPOSITORY } from '../../backend/support/fixture-repository.ts'
import { creditRequest } from '../../backend/support/applicants.ts'
import { freePort } from '../../support/ports.ts'
import { setProcessEnv } from '../../support/process-env.ts'

const FUNCTION = 'edge-infer-cpu'
let restoreEnv: (() => void) | undefined
let endpoint: LambdaEndpoint
/** Answers whatever the current test sets, as a deployed function would. */
let scripted: LambdaEndpoint
let script: (event: unknown) => Promise<unknown> = async () => null
let release: () => void = () => {}

const transportFor = (endpointUrl: string, functionName = FUNCTION) =>
  new LambdaTransport({ functionName, region: 'eu-west-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, endpoint: endpointUrl })

const call = (version: number, request: Record<string, unknown> = creditRequest(2, 0, { id: 'lambda-transport-1' }), deadlineMs = 10_000) => ({
  model: 'credit-risk', version, request: request as never, requestId: 'lambda-transport-1', deadlineAt: Date.now() + deadlineMs,
})

const failure = (promise: Promise<unknown>) => promise.then(() => { throw new Error('expected a refusal') }, (e: unknown) => e as Problem)

beforeAll(async () => {
  restoreEnv = setProcessEnv({ MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' })
  endpoint = await startLambdaEndpoint({ functionName: FUNCTION })
  scripted = await startLambdaEndpoint({ functionName: FUNCTION, handler: (event) => script(event) })
})

afterAll(async () => {
  release()
  await scripted?.close()
  await endpoint?.close()
  restoreEnv?.()
})

describe('LambdaTransport, through the real SDK against the local Invoke endpoint', () => {
  it('invokes the handler with the routed model and version and returns its infer response, marked as served by Lambda', async () => {
    const transport = transportFor(endpoint.url)
    const v1 = await transport.infer(call(1))
    expect(v1).toMatchObject({ model_name: 'credit-risk', model_version: '1', id: 'lambda-transport-1', parameters: { served_by: 'lambda', batch_reason: 'single' } })
    expect(v1.outputs[0]).toMatchObject({ name: 'probabilities', shape: [2, 2] })
    expect((await transport.infer(call(2))).model_version).toBe('2')
  })

  it('sends the routed model last, so a pass-through body cannot name another one', async () => {
    let event: Record<string, unknown> = {}
    script = async (e) => {
      event = e as Record<string, unknown>
      return { model_name: 'credit-risk', id: 'x', parameters: {}, outputs: [] }
    }
    await transportFor(scripted.url).infer(call(2, { ...creditRequest(1), model_name: 'other', model_version: '9' }))
    expect(event).toMatchObject({ model_name: 'credit-risk', model_version: '2', inputs: [{ name: 'features' }] })
    // The handler reads the event with the same schema.
    expect(lambdaInferEvent.safeParse(event).success).toBe(true)
  })

  it('maps the handler\'s refusals like the HTTP transport: 404, 400, 429/503/504 refusals, others 502', async () => {
    const transport = transportFor(endpoint.url)
    const unknown = await failure(transport.infer({ ...call(1), model: 'nope' }))
    expect(unknown).toBeInstanceOf(Problem)
    expect(unknown).not.toBeInstanceOf(BackendRefusal)
    expect(unknown.status).toBe(404)
    const badShape = await failure(transport.infer(call(1, { inputs: [{ name: 'features', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] }] })))
    expect(badShape.status).toBe(400)

    const scriptedTransport = transportFor(scripted.url)
    for (const status of [429, 503, 504] as const) {
      script = async () => ({ error: `refused with ${status}`, status })
      const refusal = await failure(scriptedTransport.infer(call(1)))
      expect(refusal).toBeInstanceOf(BackendRefusal)
      expect(refusal.status).toBe(status)
      expect(refusal.detail).toBe(`Lambda tier: refused with ${status}`)
    }
    script = async () => ({ error: 'disk on fire', status: 500 })
    const internal = await failure(scriptedTransport.infer(call(1)))
    expect(internal.status).toBe(502)
    expect(internal).not.toBeInstanceOf(BackendRefusal)
  })

  it('turns a function error (200 + X-Amz-Function-Error) into a 502 that does not leak the error message', async () => {
    script = async () => {
      throw new Error('secret internals')
    }
    const error = await failure(transportFor(scripted.url).infer(call(1)))
    expect(error.status).toBe(502)
    expect(error.detail).toMatch(/Unhandled/)
    expect(error.detail).not.toMatch(/secret internals/)
  })

  it('refuses a payload that is not an infer response with a 502', async () => {
    script = async () => 'just a string'
    expect((await failure(transportFor(scripted.url).infer(call(1)))).status).toBe(502)
  })

  it('answers 502 for an unknown function (a misconfiguration, not an outage)', async () => {
    const error = await failure(transportFor(endpoint.url, 'no-such-function').infer(call(1)))
    expect(error.status).toBe(502)
    expect(error.detail).toMatch(/ResourceNotFoundException/)
  })

  it('answers a 503 refusal when the Lambda endpoint is unreachable', async () => {
    const error = await failure(transportFor(`http://127.0.0.1:${await freePort()}`).infer(call(1)))
    expect(error).toBeInstanceOf(BackendRefusal)
    expect(error.status).toBe(503)
    expect(error.detail).toBe('Lambda tier unreachable')
  })

  it('aborts the invocation when the call\'s deadline runs out (504)', async () => {
    const started = new Promise<void>((resolve) => {
      script = () => {
        resolve()
        return new Promise((done) => (release = () => done(null)))
      }
    })
    const pending = failure(transportFor(scripted.url).infer(call(1, creditRequest(1), 200)))
    await started
    const error = await pending
    release()
    expect(error).toBeInstanceOf(BackendRefusal)
    expect(error.status).toBe(504)
  })

  it('serves no metadata: a 503 refusal that says the catalog uses the HTTP backend', async () => {
    const error = await failure(transportFor(endpoint.url).metadata('credit-risk', 'x'))
    expect(error).toBeInstanceOf(BackendRefusal)
    expect(error.status).toBe(503)
    expect(error.detail).toMatch(/no model metadata/)
  })
})
