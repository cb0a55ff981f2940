import { documentOf } from '../openapi/document.ts'
import type { ForwardOptions } from '../pipeline/forward/index.ts'
import { type BackendStatsOptions, backendStatsRoutes } from './backend-stats.ts'
import { catalogRoutes } from './catalog.ts'
import { consoleRoutes } from './console.ts'
import { controllerRoutes } from './controller.ts'
import { driftRoutes } from './drift.ts'
import { feedbackRoutes } from './feedback.ts'
import { type InferOptions, inferRoutes } from './infer.ts'
import { metaRoutes } from './meta.ts'
import { metricsRoutes } from './metrics.ts'
import { oipRoutes } from './oip.ts'
import { predictRoutes } from './predict.ts'
import { qualityRoutes } from './quality.ts'
import { rolloutRoutes } from './rollout.ts'

export interface EdgeRoutesOptions {
  backendStats?: BackendStatsOptions
  forward?: ForwardOptions
  infer?: InferOptions
}

/**
 * Every route of the edge API, each declared once: the app mounts them (edge/app.ts) and
 * `/openapi.json` describes them, in this order.
 */
export const edgeRoutes = (options: EdgeRoutesOptions = {}) => {
  let document: string | undefined
  const routes = [
    ...metaRoutes({ document: (): string => (document ??= JSON.stringify(documentOf(routes))) }),
    ...metricsRoutes(),
    ...backendStatsRoutes(options.backendStats),
    ...consoleRoutes(),
    ...catalogRoutes(),
    ...predictRoutes(options.forward),
    ...rolloutRoutes(),
    ...controllerRoutes(),
    ...driftRoutes(),
    ...qualityRoutes(),
    ...feedbackRoutes(),
    ...inferRoutes(options.infer),
    ...oipRoutes(),
  ] as const
  return routes
}
