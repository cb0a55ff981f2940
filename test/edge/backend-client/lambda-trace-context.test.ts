import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LambdaTransport } from '../../../edge/backend-client/lambda.ts'
import { creditRequest } from '../../backend/support/applicants.ts'

/** The Lambda Invoke API as far as this test needs it: records each call's ClientContext header and answers an infer response. */
let invoke: Server
let url: string
const clientContexts: Array<string | undefined> = []

beforeAll(async () => {
  invoke = createServer((req, res) => {
    clientContexts.push(req.headers['x-amz-client-context'] as string | undefined)
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ model_name: 'credit-risk', id: 'x', outputs: [] })))
  })
  await new Promise<void>((resolve) => invoke.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(invoke.address() as AddressInfo).port}`
})

afterAll(() => new Promise((resolve) => invoke?.close(resolve)))

describe('LambdaTransport and the trace context', () => {
  it('sends the call\'s traceparent in the invocation\'s ClientContext (custom.traceparent), and none when the call has none', async () => {
    const transport = new LambdaTransport({ functionName: 'edge-infer-cpu', region: 'eu-west-1', credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' }, endpoint: url, maxAttempts: 1 })
    const call = { model: 'credit-risk', version: 2, request: creditRequest(1) as never, requestId: 'r-1', deadlineAt: Date.now() + 10_000 }
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    await transport.infer({ ...call, traceparent })
    await transport.infer(call)
    expect(clientContexts).toHaveLength(2)
    expect(JSON.parse(Buffer.from(clientContexts[0]!, 'base64').toString('utf8'))).toEqual({ custom: { traceparent } })
    expect(clientContexts[1]).toBeUndefined()
  })
})
