import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads'

/**
 * A SHIM of the k6 JavaScript API — not k6 — just enough of `k6`, `k6/http` and `k6/metrics`
 * to run the scenario scripts' `setup` and default function under Node against a real server
 * (k6 itself cannot be installed here). Like k6, `http.get`/`http.post` are synchronous and
 * answer a Response with `status`, `headers` (canonical names, as Go writes them), `body`,
 * `json()` and `timings.duration`: the request runs on a worker thread while this one waits.
 * Everything the script does is recorded for the test to judge.
 */

export interface ShimRequest {
  method: string
  url: string
  body: string | undefined
  headers: Record<string, string>
  tags: Record<string, string>
  /** The statuses the script declared expected (`responseCallback: http.expectedStatuses(...)`). */
  expectedStatuses: number[] | undefined
  response: ShimResponse
}

export interface ShimResponse {
  status: number
  headers: Record<string, string>
  body: string
  error?: string
  timings: { duration: number }
  json(): unknown
}

export interface MetricSample {
  metric: string
  value: number
  tags: Record<string, string>
}

export interface Recording {
  requests: ShimRequest[]
  checks: Array<{ name: string; pass: boolean }>
  samples: MetricSample[]
  /** Custom metrics the script declared, by name and type. */
  metrics: Map<string, 'counter' | 'trend' | 'rate' | 'gauge'>
}

export const recording: Recording = { requests: [], checks: [], samples: [], metrics: new Map() }

export const resetRecording = (): void => {
  recording.requests.length = 0
  recording.checks.length = 0
  recording.samples.length = 0
}

const REQUEST_TIMEOUT_MS = 10_000

// The worker fetches and then wakes the waiting thread through the shared flag.
const WORKER = `
const { workerData } = require('node:worker_threads')
workerData.port.on('message', async ({ flag, request }) => {
  const started = performance.now()
  let reply
  try {
    const res = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body, signal: AbortSignal.timeout(request.timeoutMs) })
    const body = await res.text()
    reply = { status: res.status, headers: [...res.headers], body, duration: performance.now() - started }
  } catch (err) {
    reply = { status: 0, headers: [], body: '', error: String(err), duration: performance.now() - started }
  }
  workerData.port.postMessage(reply)
  const state = new Int32Array(flag)
  Atomics.store(state, 0, 1)
  Atomics.notify(state, 0)
})
`

let channel: { port: MessageChannel['port1']; worker: Worker } | undefined
const fetcher = () => {
  if (!channel) {
    const { port1, port2 } = new MessageChannel()
    const worker = new Worker(WORKER, { eval: true, workerData: { port: port2 }, transferList: [port2] })
    worker.unref()
    channel = { port: port1, worker }
  }
  return channel
}

export const stopShim = async (): Promise<void> => {
  await channel?.worker.terminate()
  channel = undefined
}

/** Go's textproto.CanonicalMIMEHeaderKey: how k6 names response headers (`X-Variant`). */
const canonical = (name: string): string => name.split('-').map((part) => part.charAt(0).toUpperCase() + part.slice(1).toLowerCase()).join('-')

interface Reply {
  status: number
  headers: Array<[string, string]>
  body: string
  error?: string
  duration: number
}

const send = (method: string, url: string, body: string | undefined, headers: Record<string, string>): ShimResponse => {
  const { port } = fetcher()
  const flag = new SharedArrayBuffer(4)
  port.postMessage({ flag, request: { method, url, body, headers, timeoutMs: REQUEST_TIMEOUT_MS } })
  if (Atomics.wait(new Int32Array(flag), 0, 0, REQUEST_TIMEOUT_MS + 2_000) === 'timed-out') throw new Error(`shim: ${method} ${url} got no answer`)
  const reply = receiveMessageOnPort(port)?.message as Reply
  return {
    status: reply.status,
    headers: Object.fromEntries(reply.headers.map(([k, v]) => [canonical(k), v])),
    body: reply.body,
    ...(reply.error !== undefined && { error: reply.error }),
    timings: { duration: reply.duration },
    json: () => JSON.parse(reply.body) as unknown,
  }
}

/** What `http.expectedStatuses` answers in the shim: the statuses, readable by the recorder. */
interface ExpectedStatuses {
  shimExpectedStatuses: number[]
}

interface Params {
  headers?: Record<string, string>
  tags?: Record<string, string>
  responseCallback?: ExpectedStatuses
}

const request = (method: string, url: string, body: string | undefined, params: Params = {}): ShimResponse => {
  const headers = params.headers ?? {}
  const response = send(method, url, body, headers)
  recording.requests.push({ method, url, body, headers, tags: params.tags ?? {}, expectedStatuses: params.responseCallback?.shimExpectedStatuses, response })
  return response
}

/** `k6/http` */
export const http = {
  get: (url: string, params?: Params) => request('GET', url, undefined, params),
  post: (url: string, body: string, params?: Params) => request('POST', url, body, params),
  expectedStatuses: (...statuses: number[]): ExpectedStatuses => ({ shimExpectedStatuses: statuses }),
}

/** `k6` */
export const k6 = {
  check: <T>(value: T, sets: Record<string, (v: T) => boolean>): boolean => {
    let all = true
    for (const [name, predicate] of Object.entries(sets)) {
      const pass = predicate(value)
      recording.checks.push({ name, pass })
      all &&= pass
    }
    return all
  },
  sleep: (): void => {},
  group: <T>(_name: string, fn: () => T): T => fn(),
}

const metric = (type: 'counter' | 'trend' | 'rate' | 'gauge') =>
  class {
    readonly name: string
    constructor(name: string) {
      this.name = name
      recording.metrics.set(name, type)
    }
    add(value: number | boolean, tags: Record<string, string> = {}): void {
      recording.samples.push({ metric: this.name, value: Number(value), tags })
    }
  }

/** `k6/metrics` */
export const metrics = { Counter: metric('counter'), Trend: metric('trend'), Rate: metric('rate'), Gauge: metric('gauge') }

/** The globals a k6 script reads: `__ENV`, and the VU and iteration numbers the test sets per call. */
export const setGlobals = (env: Record<string, string>, vu = 1, iter = 0): void => {
  Object.assign(globalThis, { __ENV: env, __VU: vu, __ITER: iter })
}
