import type { InferRequest } from '../../shared/protocol.ts'
import type { ModelCatalog } from '../backend-client/catalog.ts'
import type { Transport } from '../backend-client/transport.ts'
import { RATE_LIMIT, TIER_PROBLEMS, type ParameterName } from '../openapi/components.ts'
import { inferRequest, inferResponse } from '../openapi/schemas.ts'
import type { AuthVariables } from '../pipeline/auth/index.ts'
import { model } from '../pipeline/model/index.ts'
import type { Pipeline } from '../pipeline/pipeline.ts'
import { route as routeStage } from '../pipeline/route/index.ts'
import type { Reroutes } from '../pipeline/route/reroutes.ts'
import type { GroundTruthStore } from '../stores/ground-truth/ground-truth-store.ts'
import type { RolloutStore } from '../stores/rollouts/rollout-store.ts'
import type { RequestMetrics } from '../stores/tallies/tally.ts'
import { route } from './route.ts'
import { isRecord } from '../format.ts'
import { jsonBody } from '../pipeline/body/json-body.ts'
import type { BodyVariables } from '../pipeline/body/index.ts'
import type { CanaryFallbackOptions } from '../pipeline/forward/canary-fallback.ts'
import { requestDeadline } from '../pipeline/forward/deadline.ts'
import { SERVED_BY_HEADER, servedBy } from '../backend-client/fallback.ts'
import { routedCall } from '../pipeline/forward/routed-call.ts'
import type { ModelVariables } from '../pipeline/model/index.ts'
import type { RequestIdVariables } from '../pipeline/request-id/index.ts'
import type { RouteVariables } from '../pipeline/route/index.ts'
import type { Responder } from '../pipeline/stage.ts'
import type { TraceVariables } from '../pipeline/trace/index.ts'
import { Problem } from '../problem.ts'

export interface InferOptions {
  /** How a canary's failed call falls back to stable. */
  canaryFallback?: CanaryFallbackOptions
}

type InferParts = { transport: Transport; requestMetrics: RequestMetrics; groundTruth: GroundTruthStore }
type InferNeeds = RequestIdVariables & TraceVariables & BodyVariables & ModelVariables & RouteVariables & { isolate: InferParts }

/** What the tensor route reads before its own stages: the guard's and the body check's variables. */
type Guarded = RequestIdVariables & TraceVariables & AuthVariables & BodyVariables & {
  isolate: InferParts & { catalog: ModelCatalog; rollouts: RolloutStore; reroutes: Reroutes }
}

/**
 * `POST /v2/models/{m}[/versions/{v}]/infer`: Open Inference Protocol pass-through for tensor
 * clients, for every model the backend serves (a feature spec or not), after the same auth,
 * limits and routing as predict. The backend checks the tensors; the edge only makes sure it
 * forwards an infer request at all. A canary's error is retried on stable and a call the backend
 * never answered is counted against its version, as on predict; outputs are passed on as they
 * are (the edge does not know which tensor is a prediction, and the protocol carries non-finite
 * values a model may mean to send).
 */
const infer = ({ canaryFallback }: InferOptions = {}): Responder<InferNeeds> =>
  async function infer(c) {
    const body: unknown = jsonBody(c.get('bodyText'))
    if (!isRecord(body) || !Array.isArray(body.inputs)) {
      throw new Problem(400, 'Bad Request', 'an infer request is a JSON object with an "inputs" array', { slug: 'invalid-tensor-request' })
    }
    const { transport } = c.get('isolate')
    const model = c.get('model').name
    const requestId = c.get('requestId')
    const request = { ...(body as unknown as InferRequest), id: typeof body.id === 'string' ? body.id : requestId }
    const deadline = requestDeadline(c)
    const response = await routedCall(c, deadline, (version, at, traceparent) => transport.infer({ model, version, request, requestId, deadlineAt: at, traceparent }), canaryFallback)
    const res = c.json(response)
    res.headers.set(SERVED_BY_HEADER, servedBy(response))
    return res
  }

/** Model lookup and routing, then the call: the same auth, limits and routing as predict. */
const tensors = (options: InferOptions) => (guarded: Pipeline<Guarded>) =>
  guarded.then(model(), 'model').then(routeStage(), 'route').answer(guarded, infer(options), 'forward')

const inferRoute = (path: string, operationId: string, summary: string, parameters: readonly ParameterName[], options: InferOptions) =>
  route({
    method: 'post',
    path,
    guard: 'predict',
    body: inferRequest,
    operationId,
    summary,
    description: 'Open Inference Protocol (KServe V2) pass-through for tensor clients, for every model the backend serves, with or without a feature spec: the same auth, limits and routing as predict. The backend checks the tensors.',
    tag: 'inference',
    parameters: [...parameters, 'ModelVersionPin', 'ExperimentKey', 'DeadlineMs'],
    answers: { 200: { description: 'the backend\'s infer response', schema: inferResponse, headers: ['XModelVersion', 'XVariant', 'XServedBy', 'XCanaryFallback', ...RATE_LIMIT] } },
    problems: TIER_PROBLEMS,
    handle: tensors(options),
  })

export const inferRoutes = (options: InferOptions = {}) => [
  inferRoute('/v2/models/:model/infer', 'infer', 'Infer (Open Inference Protocol), routed by the rollout', ['Model'], options),
  inferRoute('/v2/models/:model/versions/:version/infer', 'inferVersion', 'Infer on a version (Open Inference Protocol)', ['Model', 'Version'], options),
] as const
