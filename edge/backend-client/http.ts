import { HEADERS } from '../../shared/headers.ts'
import type { InferResponse } from '../../shared/protocol.ts'
import { Problem } from '../problem.ts'
import { CircuitBreaker, type CircuitBreakers, circuitBreakers } from './circuit-breaker.ts'
import { isRecord } from '../format.ts'
import { type BackendAnswer, type BackendModelMetadata, type InferCall, type ProtocolReader, type TierHealth, type Transport, settle } from './transport.ts'

export interface HttpTransportOptions {
  baseUrl: string
  /** The backend's `INFER_TOKEN`, sent as a bearer token on every call. */
  token?: string
  /** Extra attempts after a connection failure or a 503, while the deadline allows. */
  retries?: number
  /**
   * Where each call finds its breaker: one per model version on this target, one for the shadow
   * copies sent to each version, one for the model list and metadata.
   */
  breakers?: CircuitBreakers
  /**
   * The breakers of protocol reads, one per URL: apart from `breakers`, since a client names
   * these URLs (any model name) and so could otherwise crowd out the circuits of infer calls.
   */
  readBreakers?: CircuitBreakers
  fetch?: typeof fetch
  now?: () => number
}

/** How long a metadata, model-list or protocol read may take, whatever the caller's deadline. */
export const REPOSITORY_TIMEOUT_MS = 5_000

/** What `send` sends; the deadline header is added per attempt, with what remains. */
interface Outgoing {
  method?: 'POST'
  headers: Record<string, string>
  body?: string
}

/** A refusal from the backend that the edge passes on (or falls back from). */
export class BackendRefusal extends Problem {
  constructor(status: 429 | 503 | 504, detail: string, retryAfter?: string) {
    const titles = { 429: 'Too Many Requests', 503: 'Service Unavailable', 504: 'Gateway Timeout' } as const
    super(status, titles[status], detail, { slug: `backend-${status}`, headers: retryAfter ? { 'retry-after': retryAfter } : {} })
  }
}

/**
 * A call the tier gave no answer to: the edge's deadline passed, the circuit was open, or the tier
 * could not be reached. The tier's own monitor never counted it, so the edge does.
 */
export class Unanswered extends BackendRefusal {}

/**
 * The tier holds no such model or version: for a version the edge's catalog listed, the backend
 * has retired it since (a version bump this isolate has not seen yet).
 */
export class NotServed extends Problem {
  constructor(detail: string) {
    super(404, 'Not Found', detail)
  }
}

/** `limit` (the caller's deadline, unless named) passed before `tier` answered. */
export const deadlinePassed = (tier: string, limit = "the request's deadline"): BackendRefusal => new Unanswered(504, `no answer from the ${tier} within ${limit}`)

/** When a call that may take at most REPOSITORY_TIMEOUT_MS gives up, and what a timeout then blames. */
interface Budget {
  deadlineAt: number
  limit?: string
}

/**
 * How the edge passes on an inference tier's refusal of an infer call, whichever tier it was:
 * overload and timeouts stay refusals (the fallback and Retry-After depend on them), unknown
 * models and bad tensors stay the client's, anything else is the tier's fault.
 */
export const tierRefusal = (tier: string, status: number, message: string, retryAfter?: string): Problem => {
  if (status === 429 || status === 503 || status === 504) return new BackendRefusal(status, `${tier}: ${message}`, retryAfter)
  if (status === 404) return new NotServed(`${tier}: ${message}`)
  if (status === 400) return new Problem(400, 'Bad Request', `${tier}: ${message}`, { slug: 'invalid-tensor-request' })
  // The tier refuses the model's config.json: permanent until its owner fixes it, and the tier's reason says what to fix.
  if (status === 409) return new Problem(409, 'Conflict', `${tier}: ${message}`, { slug: 'model-config-refused' })
  // Permanent: the request is larger than the tier will ever take (no Retry-After, no fallback).
  if (status === 413) return new Problem(413, 'Content Too Large', `${tier}: ${message}`, { slug: 'request-too-large' })
  return new Problem(502, 'Bad Gateway', `the ${tier} refused the request (${status}): ${message}`, { slug: 'backend-refused' })
}

/** The backend does not accept this edge's token (INFER_TOKEN): a configuration fault no retry cures. */
const notAuthorized = (status: number, message: string): Problem => tierRefusal('inference tier', status, message)

/** The protocol's `{"error": "..."}` of a parsed body, else the status. */
const errorOf = (body: unknown, status: number): string => (isRecord(body) && typeof body.error === 'string' ? body.error : `status ${status}`)

type JsonWithSource = {
  parse(text: string, reviver: (key: string, value: unknown, context?: { source?: string }) => unknown): unknown
  rawJSON(text: string): unknown
}

/** An integer token of 16 or more digits (2^53 has 16): not the digits of a fraction or an exponent. */
const LONG_INTEGER = /(?<![\d.eE+-])-?\d{16,}(?![\d.eE])/

/**
 * An infer response as JSON, with integers beyond 2^53 kept to the digit (INT64/UINT64 outputs,
 * which the backend writes exactly): each such number stays its source text (`JSON.rawJSON`), which
 * `JSON.stringify` writes back unchanged when the response is passed on.
 */
export const parseInferResponse = (text: string): InferResponse => {
  // A reviver makes the parse several times dearer: only a text with an integer of 16 or more digits needs one.
  if (!LONG_INTEGER.test(text)) return JSON.parse(text) as InferResponse
  const json = JSON as unknown as JsonWithSource
  return json.parse(text, (_, value, context) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && context?.source !== undefined && /^-?\d+$/.test(context.source) ? json.rawJSON(context.source) : value) as InferResponse
}

/** A text as JSON, or undefined when it is none. */
const jsonOf = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}


/**
 * A backend's answer, its body read in full within the attempt's bound: a body that stops
 * arriving is a timeout like a status that never came, and the timer goes with the attempt.
 */
interface Answer {
  status: number
  ok: boolean
  headers: Headers
  text: string
}

/** The protocol's `{"error": "..."}` of an answer's text, else its status. */
const errorOfAnswer = ({ text, status }: Pick<Answer, 'text' | 'status'>): string => errorOf(jsonOf(text), status)

/** The same for a response whose body is still to be read (the monitor's reads). */
export const backendError = async (res: Response): Promise<string> => errorOfAnswer({ text: await res.text().catch(() => ''), status: res.status })

/** A successful answer's body, which the protocol makes JSON: anything else is the tier's fault. */
const jsonAnswer = <T>({ text }: Answer): T => {
  const body = jsonOf(text)
  if (body === undefined) throw new Problem(502, 'Bad Gateway', 'the inference tier answered with a body that is not JSON', { slug: 'backend-refused' })
  return body as T
}

/**
 * Forwards to the backend over HTTP: deadline-bounded, retried only where a retry cannot
 * duplicate work (connection refused, 503), and guarded by circuit breakers scoped so that a
 * failing canary, a warming version or a slow shadow never opens the circuit of the traffic
 * clients are answered with.
 */
export class HttpTransport implements Transport, ProtocolReader {
  readonly name = 'http'
  private readonly baseUrl: string
  private readonly authorization: Record<string, string>
  private readonly retries: number
  private readonly breakers: CircuitBreakers
  private readonly readBreakers: CircuitBreakers
  /** Every attempt to this target, whatever it asked: consecutive ones left unanswered make the edge not ready. */
  private readonly reach: CircuitBreaker
  private readonly fetcher: typeof fetch
  private readonly now: () => number

  // workerd refuses `fetch` called with another `this` ("Illegal invocation"): never store it bare.
  constructor({ baseUrl, token, retries = 1, breakers = circuitBreakers(), readBreakers = circuitBreakers(), fetch: fetcher = (input, init) => fetch(input, init), now = Date.now }: HttpTransportOptions) {
    this.baseUrl = baseUrl.replace(/\/+$/, '')
    this.authorization = token ? { authorization: `Bearer ${token}` } : {}
    this.retries = retries
    this.breakers = breakers
    this.readBreakers = readBreakers
    this.reach = new CircuitBreaker({ now })
    this.fetcher = fetcher
    this.now = now
  }

  infer(call: InferCall): Promise<InferResponse> {
    return settle(call, this.post(call))
  }

  private async post(call: InferCall): Promise<InferResponse> {
    const url = `${this.baseUrl}/v2/models/${encodeURIComponent(call.model)}/versions/${call.version}/infer`
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      [HEADERS.requestId]: call.requestId,
      ...(call.traceparent ? { [HEADERS.traceparent]: call.traceparent } : {}),
    }
    // The URL names target, model and version; a 503 "not ready" counts against that version only.
    const breaker = this.breakers(call.shadow ? `${url} (shadow)` : url)
    const res = await this.send(url, { method: 'POST', headers, body: JSON.stringify(call.request) }, { deadlineAt: call.deadlineAt }, breaker)
    if (res.ok) return parseInferResponse(res.text)
    // The backend expired it in its queue at the deadline this call sent, and leaves counting it to the edge (backend/infer/serve.ts).
    if (res.status === 504) throw new Unanswered(504, `inference tier: ${errorOfAnswer(res)}`)
    throw tierRefusal('inference tier', res.status, errorOfAnswer(res), res.headers.get('retry-after') ?? undefined)
  }

  async metadata(model: string, requestId: string, deadlineAt?: number): Promise<BackendModelMetadata> {
    const res = await this.send(`${this.baseUrl}/v2/models/${encodeURIComponent(model)}`, { headers: { [HEADERS.requestId]: requestId } }, this.repositoryBudget(deadlineAt), this.repositoryBreaker())
    if (res.status === 404) throw new Problem(404, 'Not Found', `unknown model "${model}"`)
    if (res.status === 401 || res.status === 403 || res.status === 409) throw tierRefusal('inference tier', res.status, errorOfAnswer(res))
    if (!res.ok) throw new BackendRefusal(503, `inference tier could not describe model "${model}": ${errorOfAnswer(res)}`, res.headers.get('retry-after') ?? '1')
    return jsonAnswer<BackendModelMetadata>(res)
  }

  async models(requestId: string, deadlineAt?: number): Promise<string[]> {
    const res = await this.send(`${this.baseUrl}/v2/models`, { headers: { [HEADERS.requestId]: requestId } }, this.repositoryBudget(deadlineAt), this.repositoryBreaker())
    if (res.status === 401 || res.status === 403) throw notAuthorized(res.status, errorOfAnswer(res))
    if (!res.ok) throw new BackendRefusal(503, `inference tier could not list its models: ${errorOfAnswer(res)}`, res.headers.get('retry-after') ?? '1')
    const body = jsonAnswer<{ models?: Array<{ name?: unknown }> }>(res)
    return (body.models ?? []).flatMap((m) => (typeof m.name === 'string' ? [m.name] : []))
  }

  /**
   * A metadata, readiness or health read, answered as the backend answered it, a model's or the
   * server's "not ready" (503 with `ready: false`) included; its refusals are mapped as infer's are.
   */
  async read(path: string, requestId: string, deadlineAt?: number): Promise<BackendAnswer> {
    const url = `${this.baseUrl}${path}`
    // One circuit per read: a version answering "not ready" must not open the circuit of health or of other models.
    const res = await this.send(url, { headers: { [HEADERS.requestId]: requestId } }, this.repositoryBudget(deadlineAt), this.readBreakers(url))
    const body = jsonOf(res.text)
    if (res.status === 200 || (res.status === 503 && isRecord(body) && body.ready === false)) return { status: res.status, body }
    throw tierRefusal('inference tier', res.status, errorOf(body, res.status), res.headers.get('retry-after') ?? undefined)
  }

  /**
   * Not ready while the target's circuit is open: calls in a row went unanswered (unreachable,
   * timed out) and the cooldown since the last is not over; after it, the next call tells.
   */
  health(): TierHealth {
    return { ready: this.reach.state !== 'open' }
  }

  /** The caller's deadline, or REPOSITORY_TIMEOUT_MS from now when that comes first (and is then what a timeout names). */
  private repositoryBudget(deadlineAt: number | undefined): Budget {
    const bound = this.now() + REPOSITORY_TIMEOUT_MS
    return deadlineAt !== undefined && deadlineAt <= bound ? { deadlineAt } : { deadlineAt: bound, limit: `${REPOSITORY_TIMEOUT_MS / 1_000} s` }
  }

  /** The model list and metadata: one circuit per target, apart from every version's infer calls. */
  private repositoryBreaker(): CircuitBreaker {
    return this.breakers(`${this.baseUrl}/v2/models`)
  }

  /**
   * One logical request: retried on connection failure or 503 while the deadline and the breaker
   * allow a retry; when they do not, the last answer stands. Each attempt tells the backend what
   * remains of the deadline, so its queue drops the request when the caller has stopped waiting.
   */
  private async send(url: string, outgoing: Outgoing, { deadlineAt, limit }: Budget, breaker: CircuitBreaker): Promise<Answer> {
    const left = () => deadlineAt - this.now()
    if (left() < 1) throw deadlinePassed('inference tier', limit)
    if (!breaker.allow()) {
      throw new Unanswered(503, 'inference tier unavailable (circuit open)', String(breaker.retryAfterSeconds()))
    }
    for (let attempt = 0; ; attempt++) {
      const answer = await this.attempt(url, outgoing, Math.max(1, Math.floor(left())), breaker, limit)
      const unavailable = answer.status === 503
      if (!unavailable || attempt >= this.retries || left() < 1 || !breaker.allow()) {
        if (answer instanceof BackendRefusal) throw answer
        return answer
      }
    }
  }

  /**
   * One attempt the breaker let out, its answer read to the end within `leftMs`. Its outcome,
   * whatever it is, reaches the breaker before anything else happens: a probe that reported
   * nothing would hold the circuit half-open. The timer is cleared with the attempt: one left
   * running until the deadline would outlive thousands of calls under load.
   */
  private async attempt(url: string, { headers, ...outgoing }: Outgoing, leftMs: number, breaker: CircuitBreaker, limit?: string): Promise<Answer | BackendRefusal> {
    const timeout = new AbortController()
    const timer = setTimeout(() => timeout.abort(), leftMs)
    let answer: Answer
    try {
      const res = await this.fetcher(url, { ...outgoing, headers: { ...headers, ...this.authorization, [HEADERS.deadlineMs]: String(leftMs) }, signal: timeout.signal })
      answer = { status: res.status, ok: res.ok, headers: res.headers, text: await res.text() }
    } catch (err) {
      breaker.failure()
      this.reach.failure()
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
      if (timedOut) return deadlinePassed('inference tier', limit)
      return new Unanswered(503, 'inference tier unreachable', String(breaker.retryAfterSeconds()))
    } finally {
      clearTimeout(timer)
    }
    if (answer.status >= 500 && answer.status !== 504) breaker.failure()
    else breaker.success()
    this.reach.success()
    return answer
  }
}
