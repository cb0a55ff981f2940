import { HEADERS } from '../../../shared/headers.ts'
import { randomHex } from '../../random-ids.ts'

/** Rows one request was answered from the edge prediction cache, as the backend's observe route takes them. */
export interface Observation {
  model: string
  version: number
  /** The same on every resend: the backend applies an id once. */
  id: string
  /** The encoded rows, as forward would have sent them: `rows` × `width` FP32 values of `input`. */
  input: string
  width: number
  data: number[]
  /** The class probabilities each row was served with, in output column order. */
  output: string
  probabilities: number[]
  rows: number
}

/** `counted`: the backend confirmed; `refused`: it said the observation is wrong (a resend would be too); `unconfirmed`: no confirmation after every attempt. */
export type ObserveOutcome = 'counted' | 'refused' | 'unconfirmed'

export interface CachedRowsObserverOptions {
  baseUrl: string
  /** The backend's `INFER_TOKEN`, sent as a bearer token, as on infer. */
  token?: string
  /** Attempts in all, the first included. */
  attempts?: number
  /** Longest wait for one attempt's answer: past it the count is in doubt and resent under the same id. */
  timeoutMs?: number
  /** Wait before the second attempt, doubled for each further one. */
  backoffMs?: number
  fetch?: typeof fetch
}

/**
 * The id of one request's cached rows: its request id and the version (what an operator searches
 * the logs by), and a random part, since a client may send the same `X-Request-Id` with different
 * requests and each one's rows are counted. Drawn once per request: every resend carries it.
 */
export const observationId = (requestId: string, version: number): string => `${requestId}:v${version}:${randomHex(6)}`

/**
 * Reports rows answered from the edge prediction cache to the backend's drift counter
 * (`POST /v2/models/{m}/versions/{v}/observe`), off the answer's path. A reply that does not come
 * within `timeoutMs` is in doubt, as are a refused connection, a 429 and a 5xx: the same body is
 * resent with the same id, at most `attempts` times in all, and the backend applies an id once,
 * so no resend counts twice. Another 4xx is final.
 */
export class CachedRowsObserver {
  private readonly baseUrl: string
  private readonly headers: Record<string, string>
  private readonly attempts: number
  private readonly timeoutMs: number
  private readonly backoffMs: number
  private readonly fetcher: typeof fetch

  // workerd refuses `fetch` called with another `this` ("Illegal invocation"): never store it bare.
  constructor({ baseUrl, token, attempts = 3, timeoutMs = 2_000, backoffMs = 100, fetch: fetcher = (input, init) => fetch(input, init) }: CachedRowsObserverOptions) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
    this.headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }
    this.attempts = attempts
    this.timeoutMs = timeoutMs
    this.backoffMs = backoffMs
    this.fetcher = fetcher
  }

  async send(o: Observation): Promise<ObserveOutcome> {
    const url = `${this.baseUrl}/v2/models/${encodeURIComponent(o.model)}/versions/${o.version}/observe`
    const body = JSON.stringify({
      id: o.id,
      inputs: [{ name: o.input, shape: [o.rows, o.width], datatype: 'FP32', data: o.data }],
      outputs: [{ name: o.output, shape: [o.rows, o.probabilities.length / o.rows], datatype: 'FP32', data: o.probabilities }],
    })
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, this.backoffMs * 2 ** (attempt - 1)))
      try {
        const res = await this.fetcher(url, { method: 'POST', headers: { ...this.headers, [HEADERS.requestId]: o.id }, body, signal: AbortSignal.timeout(this.timeoutMs) })
        await res.body?.cancel()
        if (res.ok) return 'counted'
        if (res.status < 500 && res.status !== 408 && res.status !== 429) return 'refused'
      } catch {
        // Timed out or unreachable: in doubt, resent under the same id.
      }
    }
    return 'unconfirmed'
  }
}
