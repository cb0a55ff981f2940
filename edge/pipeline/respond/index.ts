import { HEADERS } from '../../../shared/headers.ts'
import { inBackground } from '../../background.ts'
import { SERVED_BY_HEADER, servedBy } from '../../backend-client/fallback.ts'
import type { ForwardNeeds, ForwardVariables } from '../forward/index.ts'
import type { Responder } from '../stage.ts'
import { callSpan } from '../trace/spans.ts'
import { type ShadowParts, compareWithShadow } from './shadow.ts'
import type { ServedKey, ServedRecord } from '../../stores/ground-truth/ground-truth-store.ts'
import type { AuthVariables } from '../auth/index.ts'
import type { EdgeSettings } from '../../bindings.ts'
import type { GroundTruthStore } from '../../stores/ground-truth/ground-truth-store.ts'
import { feedbackTerms } from '../../quality/feedback-opt-in.ts'

type RespondParts = ShadowParts & { groundTruth: GroundTruthStore; settings: EdgeSettings }

/**
 * Keeps what a request was served (version, variant, P(labels[1]) per instance) for its labels to
 * find, under the caller's tenant and the request id: a client's own id names only its tenant's
 * prediction. Quality is binned over that score, so only two-label models are recorded. A record
 * that cannot be written loses that request's feedback, never the answer.
 */
const recordServed = async (isolate: RespondParts, key: ServedKey, record: ServedRecord, ttlSeconds: number): Promise<void> => {
  await isolate.groundTruth.serve(key, record, ttlSeconds).catch((err: unknown) => {
    console.log(JSON.stringify({ level: 'warn', msg: 'served prediction not recorded for feedback', model: record.model, tenant: key.tenant, request_id: key.requestId, error: err instanceof Error ? err.message : String(err) }))
  })
}

/**
 * Ends `POST /v1/models/{model}/predict`: one prediction per instance from the decoded rows
 * (duplicates fanned back out), starts the shadow comparison when the request has one, keeps
 * what it served for feedback when the model has feedback on (before answering), and says which tier served it and where the time went.
 */
export const respond = (): Responder<ForwardNeeds & ForwardVariables & AuthVariables & { isolate: RespondParts }> =>
  async function respond(c) {
    const model = c.get('model')
    const { version, variant, shadow } = c.get('assignment')
    const { request, response, predictions: rows, indexOf, deadlineAt, backendMs } = c.get('inference')
    const receivedAt = c.get('receivedAt')
    // A request that fell back to stable may now be served the shadow's version: nothing to compare.
    if (shadow !== undefined && shadow !== version) {
      // The client has its answer: the shadow gets a budget as long as the client's, from now.
      const call = {
        model: model.name, version: shadow, request: { ...request, id: `${request.id}:shadow` }, requestId: c.get('requestId'),
        deadlineAt: Date.now() + (deadlineAt - receivedAt), ...callSpan(c, 'shadow'), shadow: true,
      }
      inBackground(c, compareWithShadow(c.get('isolate'), call, rows, model, version))
    }
    const isolate = c.get('isolate')
    const feedback = feedbackTerms(isolate.settings, model)
    if (feedback) {
      const [, positive] = model.postprocess.labels
      // The record's labels are the ones feedback may post (the config's, in the postprocess's order).
      const record = { model: model.name, version, variant, at: receivedAt, labels: feedback.labels, scores: indexOf.map((i) => rows[i].scores[positive]) }
      // Written before the answer goes out, so a label sent the moment the client has it finds the
      // record: one Redis round trip (shown in Server-Timing's edge part), for feedback models only,
      // bounded by REDIS_TIMEOUT_MS; a write that fails or times out still never fails the answer.
      await recordServed(isolate, { tenant: c.get('caller').tenant, requestId: c.get('requestId') }, record, feedback.ttlSeconds)
    }
    const res = c.json({
      model: model.name,
      version: String(version),
      variant,
      request_id: c.get('requestId'),
      predictions: indexOf.map((i) => rows[i]),
    })
    // On the built response: more than one header through c.json() costs a Headers copy.
    res.headers.set(SERVED_BY_HEADER, response ? servedBy(response) : 'edge')
    res.headers.set(HEADERS.serverTiming, `edge;dur=${Date.now() - receivedAt - backendMs}, backend;dur=${backendMs}`)
    return res
  }
