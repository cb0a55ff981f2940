import type { Isolate } from '../../isolate.ts'
import { defaultRollout } from '../../rollout/store.ts'
import { normalizationExposition } from '../normalize/metrics.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { Responder } from '../stage.ts'
import { type ArmWeight, countedModels, requestMetricsExposition } from './exposition.ts'
import { SCRAPE_WINDOW_MINUTES, qualityExposition } from '../../quality/exposition.ts'
import { modelQuality } from '../../quality/quality-routes.ts'

type MetricsNeeds = RequestIdVariables & { isolate: Pick<Isolate, 'requestMetrics' | 'normalization' | 'rollouts' | 'catalog' | 'transport' | 'groundTruth' | 'drift' | 'settings'> }

/** Quality of every model with feedback on that the weights name; a model whose figures cannot be read is left out of this scrape. */
const qualityOf = async (isolate: MetricsNeeds['isolate'], weights: readonly ArmWeight[], requestId: string) => {
  const { feedbackModels } = isolate.settings
  const models = [...new Set(weights.map((w) => w.model))].filter((m) => feedbackModels === 'all' || feedbackModels.has(m))
  const settled = await Promise.allSettled(models.map((model) => modelQuality(isolate, model, SCRAPE_WINDOW_MINUTES, requestId)))
  return settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
}

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
    const quality = await qualityOf(isolate, weights, c.get('requestId'))
    return c.body(normalizationExposition(normalization) + requestMetricsExposition(tally, weights) + qualityExposition(quality), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
  }
