import type { Isolate } from '../../isolate.ts'
import { defaultRollout } from '../../rollout/store.ts'
import { normalizationExposition } from '../normalize/metrics.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { Responder } from '../stage.ts'
import { type ArmWeight, countedModels, requestMetricsExposition } from './exposition.ts'

type MetricsNeeds = RequestIdVariables & { isolate: Pick<Isolate, 'requestMetrics' | 'normalization' | 'rollouts' | 'catalog' | 'transport'> }

/**
 * Every arm's weight of every model the backend lists (when it cannot, of the models the counts
 * name): stored rollouts as stored, others as the default rollout the route would use. A model
 * whose state cannot be read is left out of this scrape, not the others.
 */
const armWeights = async ({ rollouts, catalog, transport }: MetricsNeeds['isolate'], requestId: string, counted: string[]): Promise<ArmWeight[]> => {
  const models = await transport.models(requestId).catch(() => counted)
  const settled = await Promise.allSettled(models.map(async (model) => {
    const rollout = (await rollouts.get(model))?.rollout ?? defaultRollout(await catalog.describe(model, requestId))
    return rollout.arms.map((arm) => ({ model, version: arm.version, arm: arm.variant, weight: arm.weight }))
  }))
  return settled.flatMap((s) => (s.status === 'fulfilled' ? s.value : []))
}

/** `GET /metrics` (admins only): the edge's Prometheus text exposition. */
export const metricsEndpoint = (): Responder<MetricsNeeds> =>
  async function metricsEndpoint(c) {
    const isolate = c.get('isolate')
    const [normalization, tally] = await Promise.all([isolate.normalization.totals(), isolate.requestMetrics.totals()])
    const weights = await armWeights(isolate, c.get('requestId'), countedModels(tally))
    return c.body(normalizationExposition(normalization) + requestMetricsExposition(tally, weights), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
  }
