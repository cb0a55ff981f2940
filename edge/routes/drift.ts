import * as z from 'zod'
import type { QualityFigures } from '../../shared/quality.ts'
import type { ModelCatalog } from '../backend-client/catalog.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { driftReport } from '../openapi/schemas.ts'
import type { Responder } from '../pipeline/stage.ts'
import { Problem } from '../problem.ts'
import { quoteInput } from '../../shared/quote-input.ts'
import type { BackendMonitor } from '../rollout/backend-monitor.ts'
import { realizedQuality } from '../rollout/edge-counted-source.ts'
import type { GroundTruthStore } from '../stores/ground-truth/ground-truth-store.ts'
import { type ShadowPair, shadowPairs } from '../stores/tallies/shadow.ts'
import type { RequestMetrics } from '../stores/tallies/tally.ts'
import { answer, route } from './route.ts'

interface DriftParts {
  catalog: Pick<ModelCatalog, 'describe'>
  groundTruth: Pick<GroundTruthStore, 'window'>
  drift?: Pick<BackendMonitor, 'report'>
  requestMetrics: Pick<RequestMetrics, 'totals'>
}

/** The comparisons of `version` as a shadow of `model`; null when the counts cannot be read (the report still goes out). */
const asShadow = async (isolate: DriftParts, model: string, version: number): Promise<ShadowPair[] | null> => {
  try {
    return shadowPairs(await isolate.requestMetrics.totals()).filter((p) => p.model === model && p.shadow_version === version)
  } catch {
    return null
  }
}

/** The part of the backend's report that says which minutes it covers. */
const reportSpan = z.object({
  window: z.object({ from_minute: z.number().int(), to_minute: z.number().int() }),
  prediction: z.record(z.string(), z.unknown()),
})

/**
 * Realized quality of the predictions served in the report's minutes (their labels, whenever they came), every isolate's;
 * null when they cannot be read (the report still goes out) or the threshold is not a bin edge.
 */
const realizedOver = async (isolate: DriftParts, model: string, version: number, from: number, to: number, requestId: string): Promise<QualityFigures | null> => {
  try {
    const [described, counts] = await Promise.all([isolate.catalog.describe(model, requestId), isolate.groundTruth.window(model, version, from, to)])
    return realizedQuality(counts, described.postprocess?.threshold) ?? null
  } catch {
    return null
  }
}

/**
 * `GET /v1/models/{m}/versions/{v}/drift[?window=15m]`: the backend's drift report of a version,
 * with the realized quality of the same minutes beside the backend's label-free estimate
 * (`prediction.realized_quality`, `prediction.estimated_quality`), and the edge's comparison of
 * the version as a shadow with what clients were served (`shadow_comparison`).
 */
const getDriftReport = (): Responder<{ isolate: DriftParts; requestId: string }> =>
  async function getDriftReport(c) {
    const { model, version } = c.req.param()
    if (!/^[1-9][0-9]{0,8}$/.test(version)) throw new Problem(400, 'Bad Request', `version must be a positive whole number, not ${quoteInput(version)}`)
    const isolate = c.get('isolate')
    const source = isolate.drift
    if (!source) throw new Problem(503, 'Service Unavailable', 'this edge has no inference tier monitor configured', { slug: 'monitor-unavailable' })
    const report = await source.report(model, Number(version), c.req.query('window') ?? '15m', c.get('requestId'))
    const shadow_comparison = await asShadow(isolate, model, Number(version))
    const span = reportSpan.safeParse(report)
    if (!span.success) return c.json({ ...(report as object), shadow_comparison })
    const { from_minute, to_minute } = span.data.window
    const realized = await realizedOver(isolate, model, Number(version), from_minute, to_minute, c.get('requestId'))
    return c.json({ ...(report as object), prediction: { ...span.data.prediction, realized_quality: realized }, shadow_comparison })
  }

export const driftRoutes = () => [
  route({
    method: 'get',
    path: '/v1/models/:model/versions/:version/drift',
    guard: 'admin',
    operationId: 'getDriftReport',
    summary: 'The backend\'s drift report of a version',
    description: 'Per-feature statistics, thresholds and verdicts, passed through from the backend, with the realized quality of the feedback labels of the same minutes beside the backend\'s label-free estimate, and the edge\'s comparison of the version as a shadow with what clients were served.',
    tag: 'rollout',
    parameters: ['Model', 'Version', 'DriftWindow'],
    answers: { 200: { description: 'the drift report', schema: driftReport, headers: RATE_LIMIT } },
    problems: [400, 404, 502],
    handle: answer(getDriftReport()),
  }),
] as const
