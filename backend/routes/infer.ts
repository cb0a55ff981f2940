import { performance } from 'node:perf_hooks'
import { Hono, type Context } from 'hono'
import { HEADERS } from '../../shared/headers.ts'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { serveInfer } from '../infer/serve.ts'
import { readJsonBody } from '../middleware/require-json.ts'
import { requestHeader } from '../request-header.ts'
import { traceRequest } from '../middleware/trace-request.ts'

/**
 * `POST /v2/models/{m}[/versions/{v}]/infer`; serveInfer counts each request into the version's
 * metrics and statistics. One handler reads the body, resolves the version and serves it: the
 * request passes no middleware unless tracing is on.
 */
export const inferRoutes = ({ manager, settings, logger, tracing }: BackendDeps) => {
  const limits = { maxRows: settings.MAX_REQUEST_ROWS, maxElements: settings.MAX_BODY_BYTES }
  const body = { maxBytes: settings.MAX_BODY_BYTES }
  const debug = settings.LOG_LEVEL === 'debug'
  const app = new Hono<BackendEnv>()
  const infer = async (c: Context<BackendEnv>) => {
    const parsed = await readJsonBody(c, body)
    const arrived = performance.now()
    const model = c.req.param('model') as string
    const version = c.req.param('version')
    const served = manager.resident(model, version) ?? (await manager.resolve(model, version))
    const { answer, rows } = await serveInfer(served, parsed, {
      limits,
      arrived,
      deadlineHeader: requestHeader(c, HEADERS.deadlineMs),
      requestIdHeader: requestHeader(c, HEADERS.requestId),
      span: c.get('requestSpan'),
    })
    if (debug) logger.debug('infer', { model, version: served.version, id: answer.id, rows, traceparent: requestHeader(c, HEADERS.traceparent) })
    // Headers as a plain record: with more than one, c.json builds a fetch Headers per response.
    return new Response(served.responseTemplate.encode(answer), { status: 200, headers: { 'content-type': 'application/json', [HEADERS.modelVersion]: String(served.version) } })
  }
  for (const path of ['/v2/models/:model/infer', '/v2/models/:model/versions/:version/infer']) {
    // Mounted only when tracing is on: off, a request never reaches any tracing code.
    if (tracing) app.use(path, traceRequest({ tracing, route: path }))
    app.post(path, infer)
  }
  return app
}
