import type { ModelCatalog } from '../backend-client/catalog.ts'
import type { Transport } from '../backend-client/transport.ts'
import type { EdgeSettings } from '../bindings.ts'
import { RATE_LIMIT, TIER_PROBLEMS } from '../openapi/components.ts'
import { predictRequest, predictResponse } from '../openapi/schemas.ts'
import type { AuthVariables } from '../pipeline/auth/index.ts'
import type { BodyVariables } from '../pipeline/body/index.ts'
import { enrich } from '../pipeline/enrich/index.ts'
import { forward, type ForwardOptions } from '../pipeline/forward/index.ts'
import { predictionCache } from '../pipeline/cache/index.ts'
import { predictModel } from '../pipeline/model/index.ts'
import { normalize } from '../pipeline/normalize/index.ts'
import type { Pipeline } from '../pipeline/pipeline.ts'
import type { RequestIdVariables } from '../pipeline/request-id/index.ts'
import { respond } from '../pipeline/respond/index.ts'
import { route as routeStage } from '../pipeline/route/index.ts'
import type { Reroutes } from '../pipeline/route/reroutes.ts'
import type { TraceVariables } from '../pipeline/trace/index.ts'
import { validate } from '../pipeline/validate/index.ts'
import type { SchemaCache } from '../pipeline/validate/compile-spec.ts'
import type { FeatureReader } from '../stores/features/cached.ts'
import type { GroundTruthStore } from '../stores/ground-truth/ground-truth-store.ts'
import type { RolloutStore } from '../stores/rollouts/rollout-store.ts'
import type { RequestMetrics } from '../stores/tallies/tally.ts'
import { route } from './route.ts'

/** What predict reads before its own stages: the guard's and the body check's variables, and the parts its stages use. */
type Guarded = RequestIdVariables & TraceVariables & AuthVariables & BodyVariables & {
  isolate: {
    catalog: ModelCatalog
    requestMetrics: RequestMetrics
    validators: SchemaCache
    settings: EdgeSettings
    features: FeatureReader
    rollouts: RolloutStore
    reroutes: Reroutes
    transport: Transport
    groundTruth: GroundTruthStore
  }
}

/** DESIGN's request path after the body checks: model → normalize → validate → enrich → route → cache → forward → respond. */
const predictions = (options: ForwardOptions) => (guarded: Pipeline<Guarded>) =>
  guarded
    .then(predictModel(), 'model')
    .then(normalize(), 'normalize')
    .then(validate(), 'validate')
    .then(enrich(), 'enrich')
    .then(routeStage(), 'route')
    .then(predictionCache(), 'cache')
    .then(forward(options), 'forward')
    .answer(guarded, respond())

export const predictRoutes = (options: ForwardOptions = {}) => [
  route({
    method: 'post',
    path: '/v1/models/:model/predict',
    guard: 'predict',
    body: predictRequest,
    operationId: 'predict',
    summary: 'Predict labels for instances',
    description: 'The body is checked against the model\'s feature spec after input normalization; entity features are filled in from the feature store; the request is routed to an arm of the rollout (sticky by entity id, X-Experiment-Key or request id) unless X-Model-Version pins a version.',
    tag: 'predict',
    parameters: ['Model', 'ModelVersionPin', 'ExperimentKey', 'DeadlineMs'],
    answers: {
      200: {
        description: 'one prediction per instance',
        schema: predictResponse,
        headers: ['XModelVersion', 'XVariant', 'XServedBy', 'XCanaryFallback', 'XCache', 'ServerTiming', 'XInputNormalized', 'XFeaturesDegraded', ...RATE_LIMIT],
      },
    },
    problems: [422, ...TIER_PROBLEMS],
    handle: predictions(options),
  }),
] as const
