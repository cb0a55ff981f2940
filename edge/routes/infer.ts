import type { Context } from 'hono'
import { HEADERS } from '../../shared/headers.ts'
import type { InferRequest } from '../../shared/protocol.ts'
import type { AppEnv } from '../env.ts'
import type { Transport } from '../pipeline/forward/transport.ts'
import { Problem } from '../problem.ts'
import { deadlineAt } from '../pipeline/forward/deadline.ts'
import { isRecord } from '../format.ts'
import { jsonBody } from '../pipeline/body/json-body.ts'

export interface InferHandlerOptions {
  transport: (c: Context<AppEnv>) => Transport
  defaultDeadlineMs?: number
  maxDeadlineMs?: number
}

/**
 * `POST /v2/models/{m}[/versions/{v}]/infer`: Open Inference Protocol pass-through for tensor
 * clients, after the same auth, limits and routing as predict. The backend checks the tensors;
 * the edge only makes sure it forwards an infer request at all.
 */
export const inferHandler = ({ transport, defaultDeadlineMs = 10_000, maxDeadlineMs = 60_000 }: InferHandlerOptions) =>
  async function infer(c: Context<AppEnv>) {
    const receivedAt = c.get('receivedAt')
    const body: unknown = await jsonBody(c)
    if (!isRecord(body) || !Array.isArray(body.inputs)) {
      throw new Problem(400, 'Bad Request', 'an infer request is a JSON object with an "inputs" array', { slug: 'invalid-tensor-request' })
    }
    const model = c.get('model')
    const { version } = c.get('assignment')
    const response = await transport(c).infer({
      model: model.name,
      version,
      request: { ...(body as unknown as InferRequest), id: typeof body.id === 'string' ? body.id : c.get('requestId') },
      requestId: c.get('requestId'),
      deadlineAt: deadlineAt(c.req.header(HEADERS.deadlineMs), receivedAt, defaultDeadlineMs, maxDeadlineMs),
      traceparent: c.get('traceparent'),
    })
    return c.json(response)
  }
