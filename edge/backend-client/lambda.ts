import type { LambdaClient } from '@aws-sdk/client-lambda'
import { lambdaErrorResult, type LambdaInferEvent } from '../../shared/lambda.ts'
import type { InferResponse } from '../../shared/protocol.ts'
import { Problem } from '../problem.ts'
import { BackendRefusal, deadlinePassed, tierRefusal } from './http.ts'
import { type BackendModelMetadata, type InferCall, type Transport, settle } from './transport.ts'

export interface LambdaTransportOptions {
  /** Function name or ARN (LAMBDA_FUNCTION). */
  functionName: string
  /** Always explicit: Workers have no AWS config files or ambient region. */
  region: string
  /** Always explicit: Workers have no ambient AWS identity (secrets AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). */
  credentials: { accessKeyId: string; secretAccessKey: string }
  /** A local Lambda Invoke endpoint (LAMBDA_ENDPOINT); unset uses the regional endpoint. */
  endpoint?: string
  /** SDK attempts per call (connection failures, throttling), all within the call's deadline. */
  maxAttempts?: number
  /** Tests may hand in a client; otherwise one is built from the options above at the first call. */
  client?: LambdaClient
}

/**
 * The AWS SDK is most of the Worker's bytes and only this tier uses it: it is imported at the
 * first invocation, so isolates without `LAMBDA_FUNCTION` (and every isolate's startup) never
 * evaluate it.
 */
const lambdaSdk = () => import('./lambda-sdk.ts')

const isInferResponse = (value: unknown): value is InferResponse =>
  typeof value === 'object' && value !== null && Array.isArray((value as InferResponse).outputs)

/**
 * The trace context rides in the invocation's ClientContext (`custom.traceparent`, which a Node
 * handler reads as `context.clientContext.custom.traceparent`), not in the event: the event is
 * the infer request, validated as such by the handler.
 */
const clientContextOf = (call: InferCall): { ClientContext?: string } =>
  call.traceparent ? { ClientContext: btoa(JSON.stringify({ custom: { traceparent: call.traceparent } })) } : {}

/** An error the SDK built from an AWS answer (as opposed to a connection failure). */
interface ServiceError extends Error {
  $fault?: 'client' | 'server'
  $metadata?: { httpStatusCode?: number }
}

/**
 * The Lambda CPU tier: `InvokeCommand` (RequestResponse) on the backend's Lambda handler with
 * `{model_name, model_version, ...infer request}`. The answer is mapped as HttpTransport maps the
 * backend's: a refusal `{error, status}` keeps its meaning (400 → 400, 404 → 404, 429/503/504 →
 * BackendRefusal, others → 502), a function error (`FunctionError`, HTTP 200) is a 502, and the call is aborted
 * when its deadline runs out (504). Successful answers carry `parameters.served_by = "lambda"`.
 */
export class LambdaTransport implements Transport {
  readonly name = 'lambda'
  private client: Promise<LambdaClient> | undefined
  private readonly functionName: string
  private readonly clientOptions: Omit<LambdaTransportOptions, 'functionName' | 'client'>

  constructor({ functionName, client, ...clientOptions }: LambdaTransportOptions) {
    this.functionName = functionName
    this.clientOptions = clientOptions
    this.client = client && Promise.resolve(client)
  }

  private lambdaClient(): Promise<LambdaClient> {
    const { region, credentials, endpoint, maxAttempts = 2 } = this.clientOptions
    return (this.client ??= lambdaSdk().then(({ LambdaClient }) => new LambdaClient({
      region,
      credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
      ...(endpoint ? { endpoint } : {}),
      maxAttempts,
    })))
  }

  infer(call: InferCall): Promise<InferResponse> {
    return settle(call, this.invoke(call))
  }

  private async invoke(call: InferCall): Promise<InferResponse> {
    const leftMs = Math.max(1, Math.floor(call.deadlineAt - Date.now()))
    // The routed model and version go last: a pass-through body cannot name another model.
    const event: LambdaInferEvent = { ...call.request, model_name: call.model, model_version: String(call.version) }
    const payload = new TextEncoder().encode(JSON.stringify(event))
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), leftMs)
    let output
    try {
      const [client, { InvokeCommand }] = await Promise.all([this.lambdaClient(), lambdaSdk()])
      output = await client.send(
        new InvokeCommand({ FunctionName: this.functionName, InvocationType: 'RequestResponse', Payload: payload, ...clientContextOf(call) }),
        { abortSignal: controller.signal },
      )
    } catch (err) {
      if (controller.signal.aborted) throw deadlinePassed('Lambda tier')
      throw this.refusalOf(err)
    } finally {
      clearTimeout(timer)
    }
    const text = output.Payload ? new TextDecoder().decode(output.Payload) : ''
    if (output.FunctionError) {
      throw new Problem(502, 'Bad Gateway', `the Lambda tier failed on this request (${output.FunctionError})`, { slug: 'lambda-function-error' })
    }
    let result: unknown
    try {
      result = JSON.parse(text)
    } catch {
      throw new Problem(502, 'Bad Gateway', 'the Lambda tier answered with a payload that is not JSON', { slug: 'bad-lambda-payload' })
    }
    const refusal = lambdaErrorResult.safeParse(result)
    if (refusal.success) {
      const { status, error } = refusal.data
      throw tierRefusal('Lambda tier', status, error, status === 504 ? undefined : '1')
    }
    if (!isInferResponse(result)) {
      throw new Problem(502, 'Bad Gateway', 'the Lambda tier answered with something other than an infer response', { slug: 'bad-lambda-payload' })
    }
    return { ...result, parameters: { ...result.parameters, served_by: 'lambda' } }
  }

  /** The Lambda tier serves inference only: the catalog lists models from the HTTP backend. */
  async models(_requestId: string): Promise<string[]> {
    throw new BackendRefusal(503, 'the Lambda tier does not list models; the list comes from the HTTP backend', '1')
  }

  /** The Lambda tier serves inference only: the catalog reads model metadata from the HTTP backend. */
  async metadata(model: string, _requestId: string): Promise<BackendModelMetadata> {
    throw new BackendRefusal(503, `the Lambda tier serves no model metadata (asked for "${model}"); metadata comes from the HTTP backend`, '1')
  }

  /** A failed Invoke (not a function error): throttling and outages are refusals, the rest a 502. */
  private refusalOf(err: unknown): Problem {
    const error = err as ServiceError
    const status = error?.$metadata?.httpStatusCode
    if (error?.$fault === undefined || status === undefined) return new BackendRefusal(503, 'Lambda tier unreachable', '1')
    if (status === 429 || error.name === 'TooManyRequestsException') return new BackendRefusal(429, 'Lambda tier throttled the request', '1')
    if (error.$fault === 'server' || status >= 500) return new BackendRefusal(503, `Lambda tier unavailable (${error.name})`, '1')
    // 4xx: misconfiguration (unknown function, bad credentials) or a payload Lambda will not take.
    return new Problem(502, 'Bad Gateway', `the Lambda tier refused the invocation (${error.name})`, { slug: 'lambda-refused' })
  }
}
