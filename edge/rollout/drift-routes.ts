import { Hono } from 'hono'
import type { AppEnv } from '../env.ts'
import { Problem } from '../problem.ts'
import { quoteInput } from '../../shared/quote-input.ts'

/**
 * `GET /v1/models/{m}/versions/{v}/drift[?window=15m]` (admin scope, mounted behind auth): the
 * backend's drift report of a version, passed through as it is.
 */
export const driftRoutes = () =>
  new Hono<AppEnv>().get('/v1/models/:model/versions/:version/drift', async (c) => {
    const { model, version } = c.req.param()
    if (!/^[1-9][0-9]{0,8}$/.test(version)) throw new Problem(400, 'Bad Request', `version must be a positive whole number, not ${quoteInput(version)}`)
    const source = c.get('isolate').drift
    if (!source) throw new Problem(503, 'Service Unavailable', 'this edge has no inference tier monitor configured', { slug: 'monitor-unavailable' })
    return c.json(await source.report(model, Number(version), c.req.query('window') ?? '15m', c.get('requestId')))
  })
