import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { LoadOptions, LoadResult } from './autocannon.ts'
import { runToEnd } from './processes.ts'

/** Debian's wrk; WRK_BIN names another. */
export const wrkBin = (): string => process.env.WRK_BIN ?? '/usr/bin/wrk'

const RESULT_MARK = 'WRK_RESULT '

/**
 * wrk's Lua side: every thread reads the POST body from the file named after `--`, and the `done`
 * hook prints counts and latency percentiles (µs) as one JSON line, so nothing depends on wrk's
 * human-readable summary.
 */
const SCRIPT = `
function init(args)
  local file = assert(io.open(args[1], "rb"))
  wrk.body = file:read("*a")
  file:close()
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '${RESULT_MARK}{"duration_us":%.0f,"requests":%.0f,"status_errors":%.0f,"connect_errors":%.0f,"read_errors":%.0f,"write_errors":%.0f,"timeouts":%.0f,"p50_us":%.1f,"p99_us":%.1f,"mean_us":%.1f}\\n',
    summary.duration, summary.requests, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean))
end
`

/** The line the `done` hook prints. */
interface WrkJson {
  duration_us: number
  requests: number
  /** Responses with a status of 400 or more (wrk's count). */
  status_errors: number
  connect_errors: number
  read_errors: number
  write_errors: number
  timeouts: number
  p50_us: number
  p99_us: number
  mean_us: number
}

/** wrk's stdout, as the benchmark's rows read any load generator. */
export const parseWrkOutput = (stdout: string): LoadResult => {
  const line = stdout.split('\n').find((l) => l.startsWith(RESULT_MARK))
  if (line === undefined) throw new Error(`wrk printed no result line: ${stdout.slice(-500)}`)
  const json = JSON.parse(line.slice(RESULT_MARK.length)) as WrkJson
  if (!(json.duration_us > 0)) throw new Error(`wrk ran for ${json.duration_us} µs`)
  return {
    reqPerSec: json.requests / (json.duration_us / 1e6),
    ok: json.requests - json.status_errors,
    completed: json.requests,
    p50Ms: json.p50_us / 1000,
    p99Ms: json.p99_us / 1000,
    non2xx: json.status_errors,
    errors: json.connect_errors + json.read_errors + json.write_errors,
    timeouts: json.timeouts,
  }
}

/**
 * One wrk run: a single thread (a C event loop takes far less of the shared cores than
 * autocannon's JavaScript), `connections` keep-alive connections, POSTing `body` as JSON.
 */
export const runWrk = async ({ url, body, connections, durationS, headers = {} }: LoadOptions): Promise<LoadResult> => {
  const dir = await mkdtemp(join(tmpdir(), 'bench-wrk-'))
  try {
    await Promise.all([writeFile(join(dir, 'post.lua'), SCRIPT), writeFile(join(dir, 'body.json'), body)])
    const headerArgs = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`])
    const args = ['-t', '1', '-c', String(connections), '-d', `${durationS}s`, '--timeout', '10s', ...headerArgs, '-s', join(dir, 'post.lua'), url, '--', join(dir, 'body.json')]
    return parseWrkOutput(await runToEnd('wrk', wrkBin(), args))
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
