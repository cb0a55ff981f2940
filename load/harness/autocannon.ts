import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { runToEnd } from './processes.ts'

export interface LoadOptions {
  url: string
  /** JSON text, or the bytes of a binary tensor request (wrk only). */
  body: string | Uint8Array
  connections: number
  durationS: number
  /** Extra request headers (content-type is always JSON). */
  headers?: Record<string, string>
}

/** What one autocannon run measured (latencies in ms, as autocannon records them). */
export interface LoadResult {
  reqPerSec: number
  /** Responses with a 2xx status. */
  ok: number
  /** Every completed response, 2xx or not. */
  completed: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
  timeouts: number
  /** The server's CPU time per completed request, where the benchmark measured it. */
  serverCpuUsPerRequest?: number
}

/** The subset of autocannon's `--json` result the benchmark reads. */
interface AutocannonJson {
  requests: { average: number; total: number }
  latency: { p50: number; p99: number }
  '2xx': number
  non2xx: number
  errors: number
  timeouts: number
}

const autocannonBin = (): string => {
  const pkg = createRequire(import.meta.url).resolve('autocannon/package.json')
  return join(dirname(pkg), 'autocannon.js')
}

/**
 * Runs autocannon as a separate process, so the load generator's own JavaScript never shares an
 * event loop with what it measures (it still shares the two cores — that is the machine).
 */
export const runAutocannon = async ({ url, body, connections, durationS, headers = {} }: LoadOptions): Promise<LoadResult> => {
  // Its command line carries the body as text: binary bodies are wrk's.
  if (typeof body !== 'string') throw new Error('autocannon sends text bodies only; run binary bodies with wrk')
  const headerArgs = Object.entries({ 'content-type': 'application/json', ...headers }).flatMap(([k, v]) => ['-H', `${k}=${v}`])
  const args = [
    autocannonBin(), '--json',
    '-c', String(connections), '-d', String(durationS),
    '-m', 'POST', ...headerArgs, '-b', body,
    url,
  ]
  return parseResult(await runToEnd('autocannon', process.execPath, args))
}

/** autocannon prints newline-delimited JSON; the result is the last object. */
export const parseResult = (stdout: string): LoadResult => {
  const line = stdout.trim().split('\n').pop() ?? ''
  let json: AutocannonJson
  try {
    json = JSON.parse(line) as AutocannonJson
  } catch {
    throw new Error(`autocannon printed no JSON result: ${stdout.slice(-500)}`)
  }
  return {
    reqPerSec: json.requests.average,
    ok: json['2xx'],
    completed: json.requests.total,
    p50Ms: json.latency.p50,
    p99Ms: json.latency.p99,
    non2xx: json.non2xx,
    errors: json.errors,
    timeouts: json.timeouts,
  }
}
