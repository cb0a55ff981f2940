import { SERVED_BY_HEADER } from '../../backend-client/fallback.ts'
import { inBackground } from '../../background.ts'
import type { ModelVariables } from '../model/index.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { RouteVariables } from '../route/index.ts'
import type { Stage } from '../stage.ts'
import type { ServedBy } from '../../stores/tallies/tally.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'

/** Reads what earlier stages set, and after the request what the stages it ran through set. */
type RequestMetricsNeeds = { isolate: { requestMetrics: RequestMetrics } } & Pick<RequestIdVariables, 'receivedAt'> & Partial<ModelVariables & RouteVariables>

export interface RequestMetricsOptions {
  /** The response header naming the inference tier whose answer a response carries. */
  servedByHeader?: string
}

/** The model a path names, e.g. /v1/models/{model}/predict or /v2/models/{model}/infer. */
const MODEL_IN_PATH = /^\/v[12]\/models\/([^/]+)/

/**
 * Counts every answered request, refusals included, with its duration since arrival: by model,
 * routed version, variant, status and serving tier. Labels stay bounded whatever clients send:
 * a model name the catalog never described is "other", a route without a model "none". A
 * pinned request is "pinned" whatever arm serves its version, so the arms' series hold only
 * the traffic the rollout split.
 */
export const requestMetrics = ({ servedByHeader = SERVED_BY_HEADER }: RequestMetricsOptions = {}): Stage<RequestMetricsNeeds> =>
  async function requestMetrics(c, next) {
    try {
      await next()
    } finally {
      const metrics = c.get('isolate').requestMetrics
      const described = c.get('model')
      if (described) metrics.knowModel(described.name)
      const named = described?.name ?? MODEL_IN_PATH.exec(c.req.path)?.[1]
      const assignment = c.get('assignment')
      const served = c.res.headers.get(servedByHeader)
      metrics.request({
        model: named === undefined ? 'none' : metrics.knowsModel(named) ? named : 'other',
        version: assignment ? String(assignment.version) : 'none',
        variant: assignment ? (assignment.by === 'pin' ? 'pinned' : assignment.variant) : 'none',
        code: c.res.status,
        servedBy: served === 'backend' || served === 'lambda' ? (served satisfies ServedBy) : 'edge',
        seconds: (Date.now() - c.get('receivedAt')) / 1e3,
      })
      const flush = metrics.flushDue()
      if (flush) inBackground(c, flush)
    }
  }
