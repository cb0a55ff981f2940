/**
 * The one error type the backend throws for anything a client can be told about. `onError`
 * turns it into an Open Inference Protocol error body, `{"error": "..."}`, with its status.
 */
export class InferenceError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 500 | 503 | 504,
    message: string,
    readonly headers: Record<string, string> = {},
    /** Metric label for refusals, e.g. `queue_full`. */
    readonly reason?: string,
  ) {
    super(message)
    this.name = 'InferenceError'
  }
}

export const badRequest = (message: string): InferenceError => new InferenceError(400, message, {}, 'invalid_request')
export const notFound = (message: string): InferenceError => new InferenceError(404, message, {}, 'not_found')
export const unavailable = (message: string, retryAfterS?: number): InferenceError =>
  new InferenceError(503, message, retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) }, 'unavailable')
