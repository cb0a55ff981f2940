import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { randomUUID } from 'node:crypto'
import { handler as lambdaHandler, shutdownLambda } from '../../backend/lambda.ts'
import { PayloadTooLarge, listen, readBody } from '../http-server.ts'

export interface LambdaEndpointOptions {
  /** The one function this endpoint serves (by name, or by any ARN that ends in `:function:<name>`). */
  functionName: string
  /** Where it listens (0 = a free port). */
  port?: number
  host?: string
  /** The function's code; the backend's real Lambda handler by default (MODEL_REPOSITORY from the env). */
  handler?: (event: unknown, context: InvokeContext) => Promise<unknown>
  /** Release the handler's sessions on close (default true when the real handler runs). */
  shutdownOnClose?: boolean
}

export interface LambdaEndpoint {
  /** `http://host:port`, the `endpoint` to give a LambdaClient (LAMBDA_ENDPOINT). */
  url: string
  /** Invocations answered so far (tests use it to prove a call went through Lambda). */
  invocations(): number
  close(): Promise<void>
}

/** What the endpoint hands the handler as its context: the caller's ClientContext, as the Node runtime does. */
export interface InvokeContext {
  awsRequestId: string
  clientContext: { custom?: Record<string, unknown> } | null
}

/** `X-Amz-Client-Context`: base64 of a JSON object (at most 3,583 bytes); undefined when it is not one. */
const clientContextOf = (header: string | string[] | undefined): InvokeContext['clientContext'] | undefined => {
  if (header === undefined) return null
  try {
    const value: unknown = JSON.parse(Buffer.from(String(header), 'base64').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as InvokeContext['clientContext']) : undefined
  } catch {
    return undefined
  }
}

/** Synchronous invocation payload limit of AWS Lambda. */
const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/

const send = (res: ServerResponse, status: number, body: string | undefined, headers: Record<string, string> = {}): void => {
  if (res.headersSent || res.destroyed) return
  const text = body ?? ''
  res.writeHead(status, {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    'content-length': String(Buffer.byteLength(text)),
    'x-amzn-requestid': randomUUID(),
    ...headers,
  })
  res.end(text)
}

/** A service error as AWS Lambda's REST API returns it: `x-amzn-ErrorType` plus `{Type, message}`. */
const serviceError = (res: ServerResponse, status: number, type: string, message: string, kind: 'User' | 'Service' = 'User'): void =>
  send(res, status, JSON.stringify({ Type: kind, message }), { 'x-amzn-errortype': type })

const matches = (requested: string, functionName: string): boolean => {
  const [name, qualifier] = requested.includes(':function:') ? requested.split(':function:')[1]!.split(':') : requested.split(':')
  return name === functionName && (qualifier === undefined || qualifier === '$LATEST')
}

/**
 * A local stand-in for the AWS Lambda Invoke API (`POST /2015-03-31/functions/{name}/invocations`),
 * for development and tests: it runs the backend's real Lambda handler in this process. As AWS
 * does, a handled result answers 200 with `X-Amz-Executed-Version: $LATEST`, and a thrown error
 * answers 200 with `X-Amz-Function-Error: Unhandled` and `{errorMessage, errorType}`. Requests are
 * not authenticated: a SigV4 `Authorization` header is accepted and ignored.
 */
export const startLambdaEndpoint = async ({
  functionName,
  port = 0,
  host = '127.0.0.1',
  handler = lambdaHandler,
  shutdownOnClose = handler === lambdaHandler,
}: LambdaEndpointOptions): Promise<LambdaEndpoint> => {
  let invocations = 0

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://lambda.local')
    const route = INVOKE_PATH.exec(url.pathname)
    if (!route) return serviceError(res, 404, 'UnknownOperationException', `no such operation: ${req.method} ${url.pathname}`)
    if (req.method !== 'POST') return serviceError(res, 405, 'UnknownOperationException', `method ${req.method} not allowed`)
    let requested: string
    try {
      requested = decodeURIComponent(route[1]!)
    } catch {
      return serviceError(res, 400, 'InvalidParameterValueException', 'the function name is not valid percent-encoding')
    }
    const qualifier = url.searchParams.get('Qualifier')
    if (!matches(requested, functionName) || (qualifier !== null && qualifier !== '$LATEST')) {
      return serviceError(res, 404, 'ResourceNotFoundException', `Function not found: ${requested}${qualifier ? `:${qualifier}` : ''}`)
    }
    const invocationType = String(req.headers['x-amz-invocation-type'] ?? 'RequestResponse')
    if (!['RequestResponse', 'Event', 'DryRun'].includes(invocationType)) {
      return serviceError(res, 400, 'InvalidParameterValueException', `unsupported invocation type ${invocationType}`)
    }
    let body: Buffer
    try {
      body = await readBody(req, MAX_PAYLOAD_BYTES)
    } catch (err) {
      if (err instanceof PayloadTooLarge) return serviceError(res, 413, 'RequestTooLargeException', `Request must be smaller than ${MAX_PAYLOAD_BYTES} bytes for the InvokeFunction operation`)
      throw err
    }
    let event: unknown = {}
    if (body.length > 0) {
      try {
        event = JSON.parse(body.toString('utf8'))
      } catch (err) {
        return serviceError(res, 400, 'InvalidRequestContentException', `Could not parse request body into json: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
    const clientContext = clientContextOf(req.headers['x-amz-client-context'])
    if (clientContext === undefined) return serviceError(res, 400, 'InvalidParameterValueException', 'Client context must be a valid Base64-encoded JSON object.')
    if (invocationType === 'DryRun') return send(res, 204, undefined)
    invocations++
    const context: InvokeContext = { awsRequestId: randomUUID(), clientContext }
    if (invocationType === 'Event') {
      // Asynchronous invocation: accepted at once, the result goes nowhere.
      void handler(event, context).catch(() => {})
      return send(res, 202, undefined)
    }
    let result: unknown
    try {
      result = await handler(event, context)
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err))
      return send(res, 200, JSON.stringify({ errorMessage: error.message, errorType: error.name || 'Error' }), {
        'x-amz-function-error': 'Unhandled',
        'x-amz-executed-version': '$LATEST',
      })
    }
    // AWS serializes an `undefined` result as `null`.
    send(res, 200, JSON.stringify(result ?? null), { 'x-amz-executed-version': '$LATEST' })
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      serviceError(res, 500, 'ServiceException', `the local Lambda endpoint failed: ${err instanceof Error ? err.message : String(err)}`, 'Service')
    })
  })
  const url = await listen(server, port, host)

  return {
    url,
    invocations: () => invocations,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      if (shutdownOnClose) await shutdownLambda()
    },
  }
}
