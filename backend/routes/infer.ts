import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { Hono, type Context } from 'hono'
import { HEADERS, parseDeadlineMs } from '../../shared/headers.ts'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { badRequest } from '../errors.ts'
import { serveInfer } from '../infer/serve.ts'
import { requireJson } from '../middleware/require-json.ts'
import { traceRequest } from '../middleware/trace-request.ts'

const MAX_DEADLINE_MS = 3_600_000

/** The client's deadline as performance.now() time: header first, else the model's default. */
const deadlineOf = (c: Context<BackendEnv>, arrived: number, defaultMs: number | undefined): number | undefined => {
  const header = c.req.header(HEADERS.deadlineMs)
  if (header === undefined) return defaultMs === undefined ? undefined : arrived + defaultMs
  const ms = parseDeadlineMs(header, MAX_DEADLINE_MS)
  if (typeof ms !== 'number') throw badRequest(ms.invalid)
  return arrived + ms
}

/** An incoming X-Request-Id, if it is short and plain enough to echo. */
const safeRequestId = (header: string | undefined): string | undefined =>
  header !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(header) ? header : undefined

/** `POST /v2/models/{m}[/versions/{v}]/infer`; serveInfer counts each request into the version's metrics and statistics. */
export const inferRoutes = ({ manager, metrics, settings, logger, tracing }: BackendDeps) => {
  const limits = { maxRows: settings.MAX_REQUEST_ROWS, maxElements: settings.MAX_BODY_BYTES }
  const app = new Hono<BackendEnv>()
  const infer = async (c: Context<BackendEnv>) => {
    const arrived = performance.now()
    const { model, version } = c.req.param() as { model: string; version?: string }
    const served = await manager.resolve(model, version)
    const { response, rows } = await serveInfer(served, c.var.body, {
      limits,
      arrived,
      deadline: () => deadlineOf(c, arrived, served.defaultTimeoutMs),
      fallbackId: () => safeRequestId(c.req.header(HEADERS.requestId)) ?? randomUUID(),
      metrics,
      span: c.get('requestSpan'),
    })
    logger.debug('infer', { model, version: response.model_version, id: response.id, rows, traceparent: c.req.header(HEADERS.traceparent) })
    return c.json(response, 200, { [HEADERS.modelVersion]: String(served.version) })
  }
  for (const path of ['/v2/models/:model/infer', '/v2/models/:model/versions/:version/infer']) {
    // Mounted only when tracing is on: off, a request never reaches any tracing code.
    if (tracing) app.use(path, traceRequest({ tracing, route: path }))
    app.post(path, requireJson({ maxBytes: settings.MAX_BODY_BYTES }), infer)
  }
  return app
}
