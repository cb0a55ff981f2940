import { AbortedError, DeadlineExceededError, EdgeInferError, NetworkError, ProblemError, type ProblemBody } from './errors.ts'

/** The edge's longest X-Request-Deadline-Ms; a longer deadline is sent as this (the edge refuses more with 400). */
const MAX_DEADLINE_HEADER_MS = 60_000

export interface RetryOptions {
  /** Attempts in all, the first included (default 4). */
  attempts?: number
  /** First backoff step without a Retry-After (default 200 ms); it doubles per attempt, fully jittered. */
  baseDelayMs?: number
  /** Longest backoff step, and the longest Retry-After honoured (default 60 s); a longer one is not waited for. */
  maxDelayMs?: number
}

export interface TransportOptions {
  baseUrl: string
  /** Sent as `x-api-key`. */
  apiKey?: string
  headers?: Record<string, string>
  retry?: RetryOptions
  /** The fetch to call (default the global one): a Worker's service binding, a test's spy. */
  fetch?: (request: Request) => Promise<Response>
  /** Jitter's source (default Math.random). */
  random?: () => number
}

export interface CallOptions {
  /** Aborts the call, in flight or between attempts (AbortedError). */
  signal?: AbortSignal
  /** The call's deadline, retries included: sent as X-Request-Deadline-Ms, no attempt or wait runs past it (DeadlineExceededError). */
  timeoutMs?: number
  /** X-Request-Id of the call, the same on each attempt (default a fresh random id). */
  requestId?: string
  headers?: Record<string, string>
}

/**
 * What a call may be retried after. `safe`: the request means the same sent twice (reads, feedback, a
 * PUT guarded by If-Match): 429, 502, 503, 504 and network failures. `unprocessed`: only answers
 * that prove the request was not run (429, 503, a refused connection), since the edge has no
 * idempotency key and a prediction run twice is counted and logged twice.
 */
export type RetryClass = 'safe' | 'unprocessed'

export interface Answer<T> {
  body: T
  status: number
  headers: Headers
}

export interface Call {
  method: 'GET' | 'POST' | 'PUT'
  path: string
  query?: Record<string, string | undefined>
  body?: unknown
  headers?: Record<string, string | undefined>
  retry: RetryClass
}

const randomId = (): string => {
  const c = globalThis.crypto
  // React Native has no crypto.randomUUID without a polyfill: any 8-128 [A-Za-z0-9._:-] id will do.
  return typeof c?.randomUUID === 'function' ? c.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 14)}`
}

/** Retry-After as ms: delta-seconds or an HTTP date. */
const retryAfterMs = (header: string | null): number | undefined => {
  if (header === null) return undefined
  const seconds = Number(header)
  if (header.trim() !== '' && Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const at = Date.parse(header)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/** Node's fetch says why in `cause` (ECONNREFUSED): the only network failure known to precede any processing. */
const connectionRefused = (err: unknown): boolean => {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === 'ECONNREFUSED') return true
  }
  return false
}

const problemOf = async (res: Response): Promise<ProblemBody> => {
  const text = await res.text()
  try {
    const body = JSON.parse(text) as Partial<ProblemBody>
    if (typeof body.type === 'string' && typeof body.detail === 'string') return { ...body, status: res.status } as ProblemBody
  } catch {
    // Not JSON: a proxy's or platform's page, summarized below.
  }
  return { type: 'about:blank', title: res.statusText || `HTTP ${res.status}`, status: res.status, detail: text.slice(0, 200) }
}

const retried = (status: number, kind: RetryClass) => status === 429 || status === 503 || (kind === 'safe' && (status === 502 || status === 504))

/** Resolves after `ms`, or rejects when `signal` aborts first. */
const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      if (signal.aborted) reject(signal.reason)
      else resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
    if (signal.aborted) done()
  })

/**
 * Sends one call with the retry policy of its class: waits Retry-After on 429/503, a jittered
 * exponential step otherwise, never past the call's deadline, and never on another 4xx.
 */
export const transport = ({ baseUrl, apiKey, headers: clientHeaders = {}, retry = {}, fetch: send = (r) => fetch(r), random = Math.random }: TransportOptions) => {
  const { attempts = 4, baseDelayMs = 200, maxDelayMs = 60_000 } = retry
  const base = baseUrl.replace(/\/$/, '')

  return async <T>(req: Call, { signal: callerSignal, timeoutMs, requestId = randomId(), headers: callHeaders = {} }: CallOptions = {}): Promise<Answer<T>> => {
    const deadlineAt = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs
    // One signal for the whole call: the caller's abort, or the deadline.
    const control = new AbortController()
    // Kept here, not read back from signal.reason: React Native's AbortController drops the reason.
    let stop: EdgeInferError | undefined
    const halt = (reason: EdgeInferError) => {
      stop ??= reason
      control.abort(reason)
    }
    const onCallerAbort = () => halt(new AbortedError('the call was aborted', requestId, { cause: callerSignal?.reason }))
    callerSignal?.addEventListener('abort', onCallerAbort)
    if (callerSignal?.aborted) onCallerAbort()
    const timer = deadlineAt === Infinity ? undefined : setTimeout(() => halt(new DeadlineExceededError(`no answer within ${timeoutMs} ms`, requestId)), Math.max(0, deadlineAt - Date.now()))

    // By hand: React Native's URLSearchParams does not take a list of pairs.
    const query = Object.entries(req.query ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [`${encodeURIComponent(k)}=${encodeURIComponent(v)}`])).join('&')
    const url = `${base}${req.path}${query ? `?${query}` : ''}`
    const body = req.body === undefined ? undefined : JSON.stringify(req.body)
    const fixed: Record<string, string> = { ...clientHeaders, ...(apiKey ? { 'x-api-key': apiKey } : {}), ...(body ? { 'content-type': 'application/json' } : {}), 'x-request-id': requestId }
    for (const [name, value] of Object.entries({ ...req.headers, ...callHeaders })) if (value !== undefined) fixed[name] = value

    try {
      for (let attempt = 1; ; attempt++) {
        if (stop) throw stop
        const left = deadlineAt - Date.now()
        const headers = new Headers(fixed)
        if (left !== Infinity) headers.set('x-request-deadline-ms', String(Math.min(MAX_DEADLINE_HEADER_MS, Math.max(1, Math.ceil(left)))))
        let failure: EdgeInferError
        try {
          const res = await send(new Request(url, { method: req.method, headers, body, signal: control.signal }))
          if (res.ok) return { body: (await res.json()) as T, status: res.status, headers: res.headers }
          failure = new ProblemError(await problemOf(res), requestId, retryAfterMs(res.headers.get('retry-after')))
        } catch (err) {
          if (stop) throw stop
          failure = new NetworkError(`no answer from ${url}: ${err instanceof Error ? err.message : String(err)}`, requestId, { cause: err })
          if (req.retry === 'unprocessed' && !connectionRefused(err)) throw failure
        }
        let waitMs: number | undefined
        if (failure instanceof ProblemError) {
          if (failure.status === 504 && Date.now() >= deadlineAt) throw new DeadlineExceededError(`the edge answered 504 at the deadline (${timeoutMs} ms)`, requestId, { cause: failure })
          if (!retried(failure.status, req.retry)) throw failure
          waitMs = failure.retryAfterMs
        }
        if (attempt >= attempts || (waitMs !== undefined && waitMs > maxDelayMs)) throw failure
        // Full jitter on the doubling step; a little on top of Retry-After, so callers refused together come back apart.
        const wait = waitMs === undefined ? random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)) : waitMs + random() * Math.min(1_000, waitMs / 10)
        if (Date.now() + wait >= deadlineAt) {
          throw new DeadlineExceededError(`the next attempt (in ${Math.round(wait)} ms) would start past the deadline (${timeoutMs} ms)`, requestId, { cause: failure })
        }
        await sleep(wait, control.signal).catch(() => {
          throw stop
        })
      }
    } finally {
      clearTimeout(timer)
      callerSignal?.removeEventListener('abort', onCallerAbort)
    }
  }
}

export type Transport = ReturnType<typeof transport>
