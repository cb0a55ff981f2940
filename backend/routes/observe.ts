import { Hono } from 'hono'
import type { TensorMap } from '../executor/tensor.ts'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { badRequest, unavailable } from '../errors.ts'
import { errorFields } from '../logger.ts'
import { parseInferRequest } from '../infer/request.ts'
import { readJsonBody } from '../middleware/require-json.ts'

/** An observation id: the edge derives it from the request id and version; a resend carries the same one. */
const OBSERVATION_ID = /^[A-Za-z0-9._:-]{1,256}$/

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The probabilities the rows were served with: `[rows, 2]` floats in [0, 1], named as the counter's output. */
const servedOutput = (raw: unknown, name: string, rows: number): Float64Array => {
  if (!Array.isArray(raw) || raw.length !== 1 || !isObject(raw[0])) throw badRequest(`outputs must hold one tensor, "${name}", with the probabilities the rows were served with`)
  const { name: given, shape, datatype, data } = raw[0]
  if (given !== name) throw badRequest(`outputs[0].name must be "${name}"`)
  if (datatype !== 'FP32' && datatype !== 'FP64') throw badRequest(`output "${name}": datatype must be FP32 or FP64`)
  if (!Array.isArray(shape) || shape.length !== 2 || shape[0] !== rows || shape[1] !== 2) throw badRequest(`output "${name}": shape must be [${rows}, 2]`)
  if (!Array.isArray(data) || data.length !== rows * 2) throw badRequest(`output "${name}": data must hold ${rows * 2} numbers`)
  // Only finite answers are ever cached: anything else here is a malformed observation.
  if (!data.every((p) => typeof p === 'number' && p >= 0 && p <= 1)) throw badRequest(`output "${name}": every value must be a probability in [0, 1]`)
  return Float64Array.from(data as number[])
}

/**
 * `POST /v2/models/{m}/versions/{v}/observe` (docs/prediction-cache.md): rows the edge answered
 * from its prediction cache, for the version's drift counter only. The body is an infer request
 * with an `id` (required: the observation's, the same on every resend) and the encoded `inputs`
 * the version would have been sent, plus `outputs`: one tensor, the probabilities the rows were
 * served with. The model is never run, and the request health figures (requests, errors,
 * latency) are not touched: only features and predictions are counted, once per id. A count
 * not confirmed (Redis slow or down) is a 503: the edge resends with the same id. Behind the
 * same bearer token as infer (the app's `/v2/*` guard).
 */
export const observeRoutes = ({ manager, settings, logger }: BackendDeps) => {
  const limits = { maxRows: settings.MAX_REQUEST_ROWS, maxElements: settings.MAX_BODY_BYTES }
  const app = new Hono<BackendEnv>()
  app.post('/v2/models/:model/versions/:version/observe', async (c) => {
    const body = await readJsonBody(c, { maxBytes: settings.MAX_BODY_BYTES })
    if (!isObject(body)) throw badRequest('request body must be a JSON object')
    const { id, inputs, outputs } = body
    if (typeof id !== 'string' || !OBSERVATION_ID.test(id)) throw badRequest('id must be 1 to 256 characters of A-Z a-z 0-9 . _ : -: the observation id, the same on every resend')
    const model = c.req.param('model')
    const served = manager.resident(model, c.req.param('version')) ?? (await manager.resolve(model, c.req.param('version')))
    const parsed = parseInferRequest({ id, inputs }, served.config, limits)
    const { drift } = served
    // A version without a feature spec or baseline counts no drift: nothing to do, and nothing to resend.
    if (drift === undefined) return c.json({ id, rows: parsed.rows, counted: false })
    const probabilities = servedOutput(outputs, drift.output, parsed.rows)
    const tensors: TensorMap = { [drift.output]: { datatype: 'FP64', dims: [parsed.rows, 2], data: probabilities } }
    try {
      await drift.observe(id, parsed.inputs, parsed.rows, tensors)
    } catch (err) {
      logger.warn('observed rows not confirmed; the edge resends them', { model, version: served.version, id, ...errorFields(err) })
      throw unavailable('the observed rows were not confirmed counted; resend them with the same id', 1)
    }
    return c.json({ id, rows: parsed.rows, counted: true })
  })
  return app
}
