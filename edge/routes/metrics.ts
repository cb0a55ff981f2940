import * as z from 'zod'
import { within } from '../../shared/upstash-client.ts'
import type { ModelCatalog } from '../backend-client/catalog.ts'
import type { Transport } from '../backend-client/transport.ts'
import type { EdgeSettings } from '../bindings.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { normalizationExposition } from '../exposition/normalization.ts'
import { type ArmWeight, countedModels, requestMetricsExposition } from '../exposition/requests.ts'
import type { Responder } from '../pipeline/stage.ts'
import { SCRAPE_WINDOW_MINUTES, qualityExposition } from '../exposition/quality.ts'
import { shadowExposition } from '../exposition/shadow.ts'
import { modelQuality, type QualityParts } from '../quality/model-quality.ts'
import { feedbackOn } from '../quality/feedback-opt-in.ts'
import { defaultRollout } from '../rollout/rollout.ts'
import type { RolloutStore } from '../stores/rollouts/rollout-store.ts'
import type { RequestMetrics } from '../stores/tallies/tally.ts'
import { answer, route } from './route.ts'

interface MetricsParts extends QualityParts {
  requestMetrics: Pick<RequestMetrics, 'totals'>
  rollouts: Pick<RolloutStore, 'get'>
  catalog: Pick<ModelCatalog, 'describe'>
  transport: Pick<Transport, 'models'>
  settings: Pick<EdgeSettings, 'feedbackModels' | 'feedbackTtlSeconds' | 'metricsScrapeMs'>
}
type MetricsNeeds = { isolate: MetricsParts; requestId: string }

/** Settles as `work` does, or as undefined once `at` (epoch ms) has passed: a figure not known by then is left out. */
const before = <T>(work: Promise<T>, at: number): Promise<T | undefined> => within(work, Math.max(0, at - Date.now())).catch(() => undefined)

/** Quality of every model with feedback on that the weights name; a model whose figures cannot be read in time is left out of this scrape. */
const qualityOf = async (isolate: MetricsNeeds['isolate'], weights: readonly ArmWeight[], requestId: string, until: number) => {
  const models = [...new Set(weights.map((w) => w.model))]
  const settled = await Promise.all(models.map((model) => before((async () => {
    // Feedback on by the model's own config (its cached metadata) or by FEEDBACK_MODELS.
    if (!feedbackOn(isolate.settings, await isolate.catalog.describe(model, requestId))) return undefined
    return modelQuality(isolate, model, SCRAPE_WINDOW_MINUTES, requestId)
  })(), until)))
  return settled.filter((q) => q !== undefined)
}

/**
 * Every arm's weight of every model the backend lists (when it cannot within half the scrape's
 * budget, of the models the counts name): stored rollouts as stored, others as the default
 * rollout the route would use. A model whose state cannot be read in time is left out of this
 * scrape, not the others.
 */
const armWeights = async ({ rollouts, catalog, transport }: MetricsNeeds['isolate'], requestId: string, counted: string[], listBy: number, until: number): Promise<ArmWeight[]> => {
  const models = (await before(transport.models(requestId), listBy)) ?? counted
  const settled = await Promise.all(models.map((model) => before((async () => {
    const rollout = (await rollouts.get(model))?.rollout ?? defaultRollout(await catalog.describe(model, requestId))
    return rollout.arms.map((arm) => ({ model, version: arm.version, arm: arm.variant, weight: arm.weight }))
  })(), until)))
  return settled.flatMap((arms) => arms ?? [])
}

/**
 * `GET /metrics` (admins only): the edge's Prometheus text exposition. The edge's own counts are
 * always in it; what needs the backend (weights of models without a stored rollout, quality) is
 * waited for at most `metricsScrapeMs` in all, so a stalled backend cannot outlast the scrape
 * timeout and take the edge's error counts with it during the very incident.
 */
const metricsEndpoint = (): Responder<MetricsNeeds> =>
  async function metricsEndpoint(c) {
    const isolate = c.get('isolate')
    const requestId = c.get('requestId')
    const tally = await isolate.requestMetrics.totals()
    const start = Date.now()
    const until = start + isolate.settings.metricsScrapeMs
    const weights = await armWeights(isolate, requestId, countedModels(tally), start + isolate.settings.metricsScrapeMs / 2, until)
    const quality = await qualityOf(isolate, weights, requestId, until)
    return c.body(normalizationExposition(tally) + requestMetricsExposition(tally, weights) + shadowExposition(tally) + qualityExposition(quality), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
  }

export const metricsRoutes = () => [
  route({
    method: 'get',
    path: '/metrics',
    guard: 'admin',
    operationId: 'getMetrics',
    summary: 'Prometheus counters of input fixes per API key',
    tag: 'admin',
    answers: { 200: { description: 'Prometheus text exposition', schema: z.string(), headers: RATE_LIMIT, type: 'text/plain; version=0.0.4' } },
    handle: answer(metricsEndpoint()),
  }),
] as const
