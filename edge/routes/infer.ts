import type { InferRequest } from '../../shared/protocol.ts'
import { isRecord } from '../format.ts'
import type { Isolate } from '../isolate.ts'
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

type InferNeeds = RequestIdVariables & TraceVariables & BodyVariables & ModelVariables & RouteVariables & { isolate: Pick<Isolate, 'transport' | 'requestMetrics' | 'groundTruth'> }

/**
 * `POST /v2/models/{m}[/versions/{v}]/infer`: Open Inference Protocol pass-through for tensor
 * clients, for every model the backend serves (a feature spec or not), after the same auth,
 * limits and routing as predict. The backend checks the tensors; the edge only makes sure it
 * forwards an infer request at all. A canary's error is retried on stable and a call the backend
 * never answered is counted against its version, as on predict; outputs are passed on as they
 * are (the edge does not know which tensor is a prediction, and the protocol carries non-finite
 * values a model may mean to send).
 */
export const infer = ({ canaryFallback }: InferOptions = {}): Responder<InferNeeds> =>
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
