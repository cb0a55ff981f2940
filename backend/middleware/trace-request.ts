import type { MiddlewareHandler } from 'hono'
import { HEADERS } from '../../shared/headers.ts'
import type { BackendEnv } from '../env.ts'
import { InferenceError } from '../errors.ts'
import type { Tracing } from '../monitor/tracing/index.ts'

export interface TraceRequestOptions {
  tracing: Tracing
  /** The route template the middleware is mounted on, for `http.route`. */
  route: string
}

/**
 * Wraps the request in its `backend.infer` span (a child of the caller's `traceparent`) and hands
 * the span to the handler as `requestSpan`. Mounted only when tracing is on. Errors have been
 * turned into responses by `onError` when `next()` returns, so the status is the one sent.
 */
export const traceRequest = ({ tracing, route }: TraceRequestOptions): MiddlewareHandler<BackendEnv> =>
  async function traceRequest(c, next) {
    const span = tracing.startRequest(c.req.raw.headers, route, c.req.param('model') ?? '', c.req.header(HEADERS.requestId)?.slice(0, 128))
    c.set('requestSpan', span)
    let status = 500
    try {
      await next()
      status = c.res.status
    } finally {
      const { error } = c
      tracing.endRequest(span, {
        status,
        version: c.res.headers.get(HEADERS.modelVersion) ?? c.req.param('version'),
        errorType: error instanceof InferenceError ? error.reason : error?.name,
      })
    }
  }
