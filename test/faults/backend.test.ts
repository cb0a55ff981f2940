import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { creditRequest } from '../backend/support/applicants.ts'
import { startBackend, until, type BackendProcess } from '../backend/support/backend-process.ts'
import { DEMO_REPOSITORY } from '../backend/support/fixture-repository.ts'
import { startWorker, type RunningWorker } from '../edge/support/workerd.ts'
import { freePort } from '../support/ports.ts'
import { edgeClient } from '../support/client.ts'
import { demoApplicant } from '../../dev/demo-applicant.ts'

/**
 * The inference tiers behind the bundled worker in real workerd, stalled (SIGSTOP) and killed:
 * the backend, and the Lambda CPU tier (the local Invoke endpoint as a process of its own). Each
 * case asserts what the client is owed within its deadline, and that service returns once the
 * fault clears. The latency of every case is printed (the fault table in docs/architecture.md).
 */
const FUNCTION = 'edge-infer-cpu'
const DEADLINE_MS = 3_000
/** Far more than any budget here and far less than a stall: an answer inside it was bounded, not waited out. */
const MARGIN_MS = 2_000
const measured: Array<{ fault: string; outcome: string; ms: number }> = []

let backendPort: number
let backend: BackendProcess | undefined
let lambda: ChildProcess
let lambdaUrl: string
let worker: RunningWorker
let key: string

const startLambda = async (): Promise<void> => {
  lambda = spawn(process.execPath, ['--import', 'tsx', 'dev/lambda-endpoint/main.ts'], {
    env: { ...process.env, LAMBDA_FUNCTION: FUNCTION, LAMBDA_ENDPOINT_PORT: '0', MODEL_REPOSITORY: DEMO_REPOSITORY, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const [line] = (await once(createInterface({ input: lambda.stdout! }), 'line')) as [string]
  lambdaUrl = (JSON.parse(line) as { url: string }).url
  lambda.stdout!.resume()
  // Loaded once here, so a fallback in a case below is not also the handler's first load.
  const client = new LambdaClient({ region: 'eu-west-1', endpoint: lambdaUrl, credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local' }, maxAttempts: 1 })
  await client.send(new InvokeCommand({ FunctionName: FUNCTION, Payload: new TextEncoder().encode(JSON.stringify({ model_name: 'credit-risk', ...creditRequest(1) })) }))
}

const startTheBackend = async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models', PORT: String(backendPort) })
}

const predict = async (fault: string) => {
  const started = performance.now()
  const res = await edgeClient(worker.url, { key }).predict([demoApplicant(3)], { entity: { user_id: 'u-3' }, headers: { 'x-request-deadline-ms': String(DEADLINE_MS) } })
  const ms = Math.round(performance.now() - started)
  const servedBy = res.headers.get('x-served-by')
  const outcome = res.status === 200 ? `200 from ${servedBy}` : `${res.status} ${res.error?.title}${res.headers.has('retry-after') ? ', Retry-After' : ''}`
  if (fault) measured.push({ fault, outcome, ms })
  return { status: res.status, servedBy, retryAfter: res.headers.get('retry-after'), ms }
}

/** Polls (bounded) until the backend answers through the edge again. */
const recovered = () => until(async () => (await predict('')).servedBy === 'backend', { tries: 60, everyMs: 500 })

beforeAll(async () => {
  backendPort = await freePort()
  await startTheBackend()
  await startLambda()
  key = generateApiKey('test')
  const entry = { name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 100_000 }
  worker = await startWorker({
    BACKEND_URL: `http://127.0.0.1:${backendPort}`,
    API_KEYS: JSON.stringify([entry]),
    LAMBDA_FUNCTION: FUNCTION,
    LAMBDA_REGION: 'eu-west-1',
    LAMBDA_ENDPOINT: lambdaUrl,
    AWS_ACCESS_KEY_ID: 'AKIDLOCALTEST',
    AWS_SECRET_ACCESS_KEY: 'local-secret-access-key',
  })
  expect((await predict('')).servedBy).toBe('backend')
}, 180_000)

afterAll(async () => {
  for (const pid of [backend?.child.pid, lambda?.pid]) {
    if (pid !== undefined) try { process.kill(pid, 'SIGCONT') } catch { /* gone */ }
  }
  await worker?.dispose()
  await backend?.stop()
  lambda?.kill('SIGTERM')
  console.log(['| fault | outcome | measured |', '|---|---|---|', ...measured.map((m) => `| ${m.fault} | ${m.outcome} | ${m.ms} ms |`)].join('\n'))
})

describe('inference tier faults, through the worker in workerd (deadline 3,000 ms)', () => {
  it('backend stalled: the Lambda tier answers within the deadline; the backend serves again once it resumes', async () => {
    process.kill(backend!.child.pid!, 'SIGSTOP')
    try {
      const answer = await predict('backend stalled (SIGSTOP)')
      expect([answer.status, answer.servedBy]).toEqual([200, 'lambda'])
      expect(answer.ms).toBeLessThan(DEADLINE_MS + MARGIN_MS)
    } finally {
      process.kill(backend!.child.pid!, 'SIGCONT')
    }
    await recovered()
  })

  it('backend killed: the Lambda tier answers at once; a restarted backend serves again', async () => {
    backend!.child.kill('SIGKILL')
    await backend!.exited
    const answer = await predict('backend killed')
    expect([answer.status, answer.servedBy]).toEqual([200, 'lambda'])
    expect(answer.ms).toBeLessThan(DEADLINE_MS)
    await startTheBackend()
    await recovered()
  })

  it('backend killed and the Lambda tier stalled: a refusal within the deadline, not a hang', async () => {
    backend!.child.kill('SIGKILL')
    await backend!.exited
    process.kill(lambda.pid!, 'SIGSTOP')
    try {
      const answer = await predict('backend killed, Lambda stalled (SIGSTOP)')
      expect([503, 504]).toContain(answer.status)
      expect(answer.ms).toBeLessThan(DEADLINE_MS + MARGIN_MS)
    } finally {
      process.kill(lambda.pid!, 'SIGCONT')
    }
  })

  it('backend and Lambda tier both killed: 503 with Retry-After at once; service returns with the backend', async () => {
    lambda.kill('SIGKILL')
    await once(lambda, 'exit').catch(() => undefined)
    const answer = await predict('backend and Lambda killed')
    expect(answer.status).toBe(503)
    expect(answer.retryAfter).toMatch(/^[1-9][0-9]*$/)
    expect(answer.ms).toBeLessThan(DEADLINE_MS)
    await startTheBackend()
    await recovered()
  })
})
