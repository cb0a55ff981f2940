import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { InferRequest, InferResponse, ModelMetadata } from '../../shared/protocol.ts'

/** A span the caller ends when its work does: `end()`, or `end(error)` when it failed. */
export interface CallSpan {
  end(err?: unknown): void
}

/** One infer call from the edge to an inference tier. */
export interface InferCall {
  model: string
  version: number
  request: InferRequest
  requestId: string
  /**
   * When the caller stops waiting, in epoch milliseconds: fixed once, when the request arrived,
   * so that every attempt on every tier gets what remains of it rather than a fresh budget.
   */
  deadlineAt: number
  /** Sent as the call's `traceparent`: the span the tier's work is a child of. */
  traceparent?: string
  /** A copy sent to a shadow version for comparison: its failures never count against client traffic. */
  shadow?: boolean
  /** The edge's span for this call when it has one of its own (a shadow copy): the tier that makes the call ends it (`settle`). */
  span?: CallSpan
}

/** `answer`, ending the call's span, if it has one, when it settles. */
export const settle = <T>(call: InferCall, answer: Promise<T>): Promise<T> => {
  const span = call.span
  if (span === undefined) return answer
  return answer.then(
    (value) => {
      span.end()
      return value
    },
    (err: unknown) => {
      span.end(err)
      throw err
    },
  )
}

/** Metadata the backend serves, with the protocol extensions the edge compiles validation from. */
export interface BackendModelMetadata extends ModelMetadata {
  features?: unknown
  postprocess?: unknown
  feedback?: unknown
}

/** How the edge reaches an inference tier: HTTP to the GPU backend, or the Lambda CPU tier. */
export interface Transport {
  readonly name: string
  infer(call: InferCall): Promise<InferResponse>
  /** `deadlineAt`: when the caller stops waiting (epoch ms); the tier's own bound applies either way. */
  metadata(model: string, requestId: string, deadlineAt?: number): Promise<BackendModelMetadata>
  /** Names of the models the tier holds. */
  models(requestId: string, deadlineAt?: number): Promise<string[]>
}

/** A backend answer the edge passes on as it is: its status and its JSON body. */
export interface BackendAnswer {
  status: ContentfulStatusCode
  body: unknown
}

/** Whether the edge reaches the backend, as its own calls found: no call is made to tell. */
export interface TierHealth {
  ready: boolean
}

/**
 * Open Inference Protocol reads (model metadata and readiness) from the HTTP backend, and how
 * the edge's calls to it fare: the Lambda tier serves inference only, so these are not part of
 * `Transport`.
 */
export interface ProtocolReader {
  /** GETs `path` (e.g. `/v2/models/m/ready`) from the backend, waiting until `deadlineAt` at most. */
  read(path: string, requestId: string, deadlineAt?: number): Promise<BackendAnswer>
  health(): TierHealth
}
