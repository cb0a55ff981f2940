import type { components } from './schema.ts'

export type ProblemBody = components['schemas']['Problem']
export type FieldError = NonNullable<ProblemBody['errors']>[number]

/** Every error the client throws: `requestId` is the id the call was sent with, for logs on both sides. */
export class EdgeInferError extends Error {
  // Spelled out: a minifier renames classes, and callers log `name`.
  override name = 'EdgeInferError'
  constructor(message: string, readonly requestId: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}

/**
 * The edge refused: an RFC 9457 problem (`application/problem+json`). `errors` holds the field-level
 * complaints of a 400, each with the `path` of the field, e.g. `instances.0.age`.
 */
export class ProblemError extends EdgeInferError {
  override name = 'ProblemError'
  readonly type: string
  readonly title: string
  readonly status: number
  readonly detail: string
  readonly errors: readonly FieldError[]
  /** The answer's `Retry-After` in ms (429 and 503 carry one); undefined when it sent none. */
  readonly retryAfterMs: number | undefined

  constructor(problem: ProblemBody, requestId: string, retryAfterMs?: number) {
    const fields = (problem.errors ?? []).map((e) => `${e.path}: ${e.message}`).join('; ')
    super(`${problem.status} ${problem.title}: ${problem.detail}${fields ? ` (${fields})` : ''}`, problem.request_id ?? requestId)
    this.type = problem.type
    this.title = problem.title
    this.status = problem.status
    this.detail = problem.detail
    this.errors = problem.errors ?? []
    this.retryAfterMs = retryAfterMs
  }

  /** The paths of the fields the edge complained about. */
  get fieldPaths(): string[] {
    return this.errors.map((e) => e.path)
  }
}

/** The call's deadline (`timeoutMs`) passed: in flight, or before a retry could be made within it. `cause` is the last answer, if any. */
export class DeadlineExceededError extends EdgeInferError {
  override name = 'DeadlineExceededError'
}

/** The caller's `signal` aborted the call; nothing is retried after that. */
export class AbortedError extends EdgeInferError {
  override name = 'AbortedError'
}

/** No HTTP answer came (connection refused, reset, DNS); `cause` is what fetch threw. */
export class NetworkError extends EdgeInferError {
  override name = 'NetworkError'
}
