import { Hono } from 'hono'
import { z } from 'zod'
import type { QualityFigures } from '../../shared/quality.ts'
import type { AppEnv } from '../env.ts'
import type { Isolate } from '../isolate.ts'
import { Problem } from '../problem.ts'
import { quoteInput } from '../../shared/quote-input.ts'
import { realizedQuality } from './edge-counted-source.ts'

/** The part of the backend's report that says which minutes it covers. */
const reportSpan = z.object({
  window: z.object({ from_minute: z.number().int(), to_minute: z.number().int() }),
  prediction: z.record(z.string(), z.unknown()),
})

/**
 * Realized quality of the feedback labels that arrived in the report's minutes, every isolate's;
 * null when they cannot be read (the report still goes out) or the threshold is not a bin edge.
 */
const realizedOver = async (isolate: Pick<Isolate, 'catalog' | 'groundTruth'>, model: string, version: number, from: number, to: number, requestId: string): Promise<QualityFigures | null> => {
  try {
    const [described, counts] = await Promise.all([isolate.catalog.describe(model, requestId), isolate.groundTruth.window(model, version, from, to)])
    return realizedQuality(counts, described.postprocess?.threshold) ?? null
  } catch {
    return null
  }
}

/**
 * `GET /v1/models/{m}/versions/{v}/drift[?window=15m]` (admin scope, mounted behind auth): the
 * backend's drift report of a version, with the realized quality of the same minutes beside the
 * backend's label-free estimate (`prediction.realized_quality`, `prediction.estimated_quality`).
 */
export const driftRoutes = () =>
  new Hono<AppEnv>().get('/v1/models/:model/versions/:version/drift', async (c) => {
    const { model, version } = c.req.param()
    if (!/^[1-9][0-9]{0,8}$/.test(version)) throw new Problem(400, 'Bad Request', `version must be a positive whole number, not ${quoteInput(version)}`)
    const isolate = c.get('isolate')
    const source = isolate.drift
    if (!source) throw new Problem(503, 'Service Unavailable', 'this edge has no inference tier monitor configured', { slug: 'monitor-unavailable' })
    const report = await source.report(model, Number(version), c.req.query('window') ?? '15m', c.get('requestId'))
    const span = reportSpan.safeParse(report)
    if (!span.success) return c.json(report)
    const { from_minute, to_minute } = span.data.window
    const realized = await realizedOver(isolate, model, Number(version), from_minute, to_minute, c.get('requestId'))
    return c.json({ ...(report as object), prediction: { ...span.data.prediction, realized_quality: realized } })
  })
