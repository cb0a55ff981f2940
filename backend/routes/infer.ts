import { performance } from 'node:perf_hooks'
import { Hono, type Context } from 'hono'
import { HEADERS } from '../../shared/headers.ts'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { INFERENCE_HEADER_LENGTH, binaryOutputs, encodeBinaryAnswer, readBinaryInfer } from '../infer/binary.ts'
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
    // The binary tensor data extension: the header names the JSON part's length, tensor bytes follow it.
    const headerLength = requestHeader(c, INFERENCE_HEADER_LENGTH)
    const { header, binary } = headerLength === undefined ? { header: await readJsonBody(c, body), binary: undefined } : await readBinaryInfer(c, body.maxBytes, headerLength)
    const arrived = performance.now()
    const model = c.req.param('model') as string
    const version = c.req.param('version')
    const served = manager.resident(model, version) ?? (await manager.resolve(model, version))
    const { answer, rows } = await serveInfer(served, header, {
      limits,
      arrived,
      deadlineHeader: requestHeader(c, HEADERS.deadlineMs),
      requestIdHeader: requestHeader(c, HEADERS.requestId),
      span: c.get('requestSpan'),
      binary,
    })
    if (debug) logger.debug('infer', { model, version: served.version, id: answer.id, rows, traceparent: requestHeader(c, HEADERS.traceparent) })
    const binaryNames = binaryOutputs(header, answer.outputs)
    if (binaryNames) {
      const { body: bytes, headerLength: length } = encodeBinaryAnswer(served.model, String(served.version), answer, binaryNames)
      return new Response(bytes, { status: 200, headers: { 'content-type': 'application/octet-stream', [INFERENCE_HEADER_LENGTH]: String(length), [HEADERS.modelVersion]: String(served.version) } })
    }
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
