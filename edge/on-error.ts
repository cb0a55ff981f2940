import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { RequestIdVariables } from './pipeline/request-id/index.ts'
import type { StageEnv } from './pipeline/stage.ts'
import { PROBLEM_CONTENT_TYPE, Problem } from './problem.ts'

/**
 * The edge's one error mapper: a `Problem` becomes its problem+json body; anything else is an
 * internal error whose details stay out of the response.
 */
/** What the error mapper reads: the request id, when the request got far enough to have one. */
export type ErrorEnv = StageEnv<Partial<RequestIdVariables>>

export const onError = <E extends ErrorEnv>(err: Error, c: Context<E>): Response => {
  const problem =
    err instanceof Problem
      ? err
      : err instanceof HTTPException
        ? new Problem(err.status, err.status === 413 ? 'Payload Too Large' : 'Bad Request', err.message || 'request refused')
        : new Problem(500, 'Internal Server Error', 'the edge failed to handle this request; it has been logged', { slug: 'internal' })
  if (problem.status >= 500 && !(err instanceof Problem)) {
    console.error(JSON.stringify({ level: 'error', msg: 'unhandled error', request_id: c.get('requestId'), error: err.message }))
  }
  const requestId = c.get('requestId')
  const body = problem.body(requestId, c.req.path)
  // Open Inference Protocol clients read an error from `error`: the routes under /v2 carry it too.
  const rendered = c.req.path.startsWith('/v2/') ? { ...body, error: body.detail } : body
  // Through c.body(), so what earlier stages named with c.header() (request and trace ids, CORS,
  // rate limits, input fixes) reaches the problem response too.
  return c.body(JSON.stringify(rendered), problem.status, {
    'content-type': PROBLEM_CONTENT_TYPE,
    ...(requestId ? { 'x-request-id': requestId } : {}),
    ...problem.extra.headers,
  })
}

/** 404 for routes the edge does not have, in the same shape. */
export const notFound = <E extends ErrorEnv>(c: Context<E>): Response => onError(new Problem(404, 'Not Found', `no route for ${c.req.method} ${c.req.path}`), c)
