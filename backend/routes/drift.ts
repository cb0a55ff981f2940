import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { badRequest, notFound, unavailable } from '../errors.ts'
import type { ModelVersion } from '../loader/model-version.ts'
import type { DriftCounter } from '../monitor/drift/counter.ts'
import { MINUTE_MS } from '../../shared/drift/report.ts'
import { RETAINED_MINUTES } from '../monitor/drift/minute-buckets.ts'
import { readReportBaseline, type ReportBaseline } from '../monitor/drift/report-baseline.ts'
import { driftReport, type DriftReport } from '../monitor/drift/report.ts'
import { quoteInput } from '../../shared/quote-input.ts'

const DEFAULT_WINDOW_MINUTES = 15
/** Windows the alert rule looks back over (it needs 3 in a row, and 3 more to clear). */
const MAX_WINDOWS = 6

/** `15m`, `1h`, or a bare number of minutes; 1 to the retained minutes. */
export const parseWindow = (query: string | undefined): number => {
  if (query === undefined) return DEFAULT_WINDOW_MINUTES
  const match = /^([0-9]{1,4})(m|h)?$/.exec(query)
  const minutes = match ? Number(match[1]) * (match[2] === 'h' ? 60 : 1) : Number.NaN
  if (!(minutes >= 1 && minutes <= RETAINED_MINUTES)) {
    throw badRequest(`window must be minutes ("15m", "90") or hours ("2h") from 1 minute to ${RETAINED_MINUTES / 60} hours, not "${query}"`)
  }
  return minutes
}

const baselines = new WeakMap<ModelVersion, Promise<ReportBaseline>>()

const counterOf = (served: ModelVersion): DriftCounter => {
  if (served.drift) return served.drift
  throw notFound(`model "${served.model}" version ${served.version} has no drift monitoring: it lacks a baseline or a feature spec that fits it`)
}

/** With Redis configured, counts are every replica's, and reading them fails when Redis does. */
const unreadable = (err: unknown) => unavailable(`drift counts could not be read: ${(err as Error).message}`, 1)

/**
 * The drift report of a served version over the last `minutes`, with the alert rule run over
 * the windows of the same length before it (as many as the retained minutes hold, at most 6),
 * each listed with its verdict: `?window=30m` gives the last 3 hours.
 */
export const versionDriftReport = async (served: ModelVersion, minutes: number, now = Date.now()): Promise<DriftReport> => {
  const counter = counterOf(served)
  let baseline = baselines.get(served)
  if (!baseline) baselines.set(served, (baseline = readReportBaseline(served.disk.path)))
  const reference = await baseline.catch((err: Error) => {
    throw notFound(`model "${served.model}" version ${served.version}: ${err.message}`)
  })
  const count = Math.min(MAX_WINDOWS, Math.floor(RETAINED_MINUTES / minutes))
  try {
    const windows = await Promise.all(Array.from({ length: count }, (_, i) => counter.window(minutes, now - (count - 1 - i) * minutes * MINUTE_MS)))
    const important = new Set(served.config.features?.features.filter((f) => f.important).map((f) => f.name))
    return driftReport(reference, important, windows, served.config.postprocess?.threshold)
  } catch (err) {
    throw unreadable(err)
  }
}

const servedVersion = async ({ manager }: BackendDeps, model: string, version: string): Promise<ModelVersion> => {
  const served = await manager.serving(model, version)
  if (!served) throw notFound(`model ${quoteInput(model)} version ${quoteInput(version)} is not loaded`)
  return served
}

/**
 * `GET /v2/models/{m}/versions/{v}/drift[?window=15m]`: statistics, thresholds and verdicts per
 * feature; `…/drift/counts[?window=]`: the raw merged bin counts (`DriftCounts`) they come from.
 */
export const driftRoutes = (deps: BackendDeps) =>
  new Hono<BackendEnv>()
    .get('/v2/models/:model/versions/:version/drift', async (c) => {
      const minutes = parseWindow(c.req.query('window'))
      const served = await servedVersion(deps, c.req.param('model'), c.req.param('version'))
      return c.json(await versionDriftReport(served, minutes))
    })
    .get('/v2/models/:model/versions/:version/drift/counts', async (c) => {
      const minutes = parseWindow(c.req.query('window'))
      const counter = counterOf(await servedVersion(deps, c.req.param('model'), c.req.param('version')))
      return c.json(await counter.window(minutes).catch((err: unknown) => {
        throw unreadable(err)
      }))
    })
