import { HEADERS } from '../../shared/headers.ts'
import type { InferRequest } from '../../shared/protocol.ts'
import { isRecord } from '../format.ts'
import type { Isolate } from '../isolate.ts'
import { jsonBody } from '../pipeline/body/json-body.ts'
import type { BodyVariables } from '../pipeline/body/index.ts'
import { deadlineAt } from '../pipeline/forward/deadline.ts'
import { SERVED_BY_HEADER, servedBy } from '../pipeline/forward/fallback-transport.ts'
import type { ModelVariables } from '../pipeline/model/index.ts'
import type { RequestIdVariables } from '../pipeline/request-id/index.ts'
import type { RouteVariables } from '../pipeline/route/index.ts'
import type { Responder } from '../pipeline/stage.ts'
import type { TraceVariables } from '../pipeline/trace/index.ts'
import { Problem } from '../problem.ts'

export interface InferOptions {
  defaultDeadlineMs?: number
  maxDeadlineMs?: number
}

type InferNeeds = RequestIdVariables & TraceVariables & BodyVariables & ModelVariables & RouteVariables & { isolate: Pick<Isolate, 'transport'> }

/**
 * `POST /v2/models/{m}[/versions/{v}]/infer`: Open Inference Protocol pass-through for tensor
 * clients, for every model the backend serves (a feature spec or not), after the same auth,
 * limits and routing as predict. The backend checks the tensors; the edge only makes sure it
 * forwards an infer request at all.
 */
export const infer = ({ defaultDeadlineMs = 10_000, maxDeadlineMs = 60_000 }: InferOptions = {}): Responder<InferNeeds> =>
  async function infer(c) {
    const body: unknown = jsonBody(c.get('bodyText'))
    if (!isRecord(body) || !Array.isArray(body.inputs)) {
      throw new Problem(400, 'Bad Request', 'an infer request is a JSON object with an "inputs" array', { slug: 'invalid-tensor-request' })
    }
    const response = await c.get('isolate').transport.infer({
      model: c.get('model').name,
      version: c.get('assignment').version,
      request: { ...(body as unknown as InferRequest), id: typeof body.id === 'string' ? body.id : c.get('requestId') },
      requestId: c.get('requestId'),
      deadlineAt: deadlineAt(c.req.header(HEADERS.deadlineMs), c.get('receivedAt'), defaultDeadlineMs, maxDeadlineMs),
      traceparent: c.get('traceparent'),
    })
    const res = c.json(response)
    res.headers.set(SERVED_BY_HEADER, servedBy(response))
    return res
  }
