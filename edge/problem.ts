import type { ContentfulStatusCode, UnofficialStatusCode } from 'hono/utils/http-status'

/**
 * nginx's 499: the client closed the connection before it was answered. Nobody reads the
 * response; the status is there so logs and error rates count the request as the client's doing.
 */
export const CLIENT_CLOSED_REQUEST = 499 as UnofficialStatusCode

/** One field-level complaint of a validation problem. */
export interface FieldError {
  path: string
  message: string
}

/** RFC 9457 problem details, as the edge answers every failure. */
export interface ProblemBody {
  type: string
  title: string
  status: number
  detail: string
  instance?: string
  request_id?: string
  errors?: FieldError[]
}

const TYPE_BASE = 'https://edge-infer.dev/problems/'

/**
 * The one error type the edge throws. `onError` renders it as `application/problem+json`; its
 * `detail` is written for the client and never carries a key, a stack or an upstream body.
 */
export class Problem extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly title: string,
    readonly detail: string,
    readonly extra: { slug?: string; errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail)
    this.name = 'Problem'
  }

  get type(): string {
    return `${TYPE_BASE}${this.extra.slug ?? this.title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`
  }

  body(requestId?: string, instance?: string): ProblemBody {
    return {
      type: this.type,
      title: this.title,
      status: this.status,
      detail: this.detail,
      ...(instance ? { instance } : {}),
      ...(requestId ? { request_id: requestId } : {}),
      ...(this.extra.errors ? { errors: this.extra.errors } : {}),
    }
  }
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'
