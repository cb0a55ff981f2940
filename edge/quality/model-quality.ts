import { minuteOf } from '../../shared/drift/report.ts'
import * as z from 'zod'
import { qualityFigures, type QualityFigures } from '../../shared/quality.ts'
import type { ModelCatalog } from '../backend-client/catalog.ts'
import { Problem } from '../problem.ts'
import type { BackendMonitor } from '../rollout/backend-monitor.ts'
import { quoteInput } from '../../shared/quote-input.ts'
import { realizedQuality } from '../rollout/edge-counted-source.ts'
import { DELAY_BUCKETS, MAX_QUALITY_WINDOW_MINUTES, type GroundTruthStore } from '../stores/ground-truth/ground-truth-store.ts'

/** What a model's quality is read from: the catalog, the feedback counts and the backend's drift reports. */
export interface QualityParts {
  catalog: Pick<ModelCatalog, 'describe'>
  groundTruth: Pick<GroundTruthStore, 'window'>
  drift?: Pick<BackendMonitor, 'report'>
}

/** One version's realized figures (from feedback) beside the backend's label-free estimate of them. */
const versionQuality = z.object({
  version: z.number().int(),
  realized: qualityFigures.extend({ positives: z.number().nonnegative() }).nullable().describe('from the feedback labels of the predictions served in the window, whenever they arrived; null when the threshold is not a bin edge'),
  estimated: qualityFigures.nullable().describe("CBPE from the backend's drift report over the same window; null when it sent none or could not be asked"),
  label_delay: z.array(z.object({ le: z.union([z.number(), z.literal('+Inf')]), labels: z.number().nonnegative() })).describe('labels per delay bucket (seconds from serving to label), not cumulative'),
  edge_failures: z.number().nonnegative().describe('calls to this version that failed at the edge without an answer from the backend'),
})
export type VersionQuality = z.infer<typeof versionQuality>

/** `GET /v1/models/{m}/quality`'s answer. */
export const modelQualityResponse = z.object({ model: z.string(), window_minutes: z.number().int(), versions: z.array(versionQuality) })

const WINDOW = /^([1-9][0-9]{0,4})(m|h)$/

export const windowMinutesOf = (raw: string): number => {
  const match = WINDOW.exec(raw)
  const minutes = match ? Number(match[1]) * (match[2] === 'h' ? 60 : 1) : Number.NaN
  if (!(minutes >= 1 && minutes <= MAX_QUALITY_WINDOW_MINUTES)) {
    throw new Problem(400, 'Bad Request', `window must be minutes or hours such as 15m or 6h, at most ${MAX_QUALITY_WINDOW_MINUTES / 60}h (7 days); got ${quoteInput(raw)}`, { slug: 'invalid-window' })
  }
  return minutes
}

/** The backend's estimate of a version's quality over the window, when its drift report carries one. */
const estimatedOf = async (isolate: Pick<QualityParts, 'drift'>, model: string, version: number, window: string, requestId: string): Promise<QualityFigures | null> => {
  if (!isolate.drift) return null
  const report = await isolate.drift.report(model, version, window, requestId).catch(() => undefined)
  const raw = (report as { prediction?: { estimated_quality?: unknown } } | undefined)?.prediction?.estimated_quality
  const parsed = qualityFigures.safeParse(raw)
  return parsed.success ? parsed.data : null
}

/**
 * Every served version's quality over the last `minutes`, realized (labels of the predictions served
 * in them) and estimated. A window longer than a day is read in whole hours (ground-truth-store.ts).
 */
export const modelQuality = async (isolate: QualityParts, model: string, minutes: number, requestId: string): Promise<z.infer<typeof modelQualityResponse>> => {
  const described = await isolate.catalog.describe(model, requestId)
  const threshold = described.postprocess?.threshold
  const to = minuteOf(Date.now())
  const versions = await Promise.all(described.versions.map(async (version): Promise<VersionQuality> => {
    const [counts, estimated] = await Promise.all([
      isolate.groundTruth.window(described.name, version, to - minutes + 1, to).catch(() => {
        throw new Problem(503, 'Service Unavailable', 'the feedback counts cannot be read right now; retry shortly', { slug: 'quality-unavailable', headers: { 'retry-after': '1' } })
      }),
      estimatedOf(isolate, described.name, version, `${minutes}m`, requestId),
    ])
    const figures = realizedQuality(counts, threshold)
    return {
      version,
      realized: figures ? { ...figures, positives: counts.bins.reduce((sum, b) => sum + b.positives, 0) } : null,
      estimated,
      label_delay: counts.delays.map((labels, i) => ({ le: i < DELAY_BUCKETS.length ? DELAY_BUCKETS[i] : '+Inf', labels })),
      edge_failures: counts.edgeFailures,
    }
  }))
  return { model: described.name, window_minutes: minutes, versions }
}
