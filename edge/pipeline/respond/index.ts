import { HEADERS } from '../../../shared/headers.ts'
import type { InferResponse } from '../../../shared/protocol.ts'
import { inBackground } from '../../background.ts'
import { Problem } from '../../problem.ts'
import { SERVED_BY_HEADER, servedBy } from '../forward/fallback-transport.ts'
import type { ForwardNeeds, ForwardVariables } from '../forward/index.ts'
import type { InferCall } from '../forward/transport.ts'
import type { Isolate } from '../../isolate.ts'
import type { PredictableModel } from '../model/catalog.ts'
import type { Responder } from '../stage.ts'
import { callSpan } from '../trace/spans.ts'

type ShadowParts = Pick<Isolate, 'transport' | 'requestMetrics'>

export interface Prediction {
  label: string
  probability: number
  scores: Record<string, number>
}

/** Turns one row of class probabilities into the label the model's postprocess names. */
export const toPrediction = (probabilities: readonly number[], post: PredictableModel['postprocess']): Prediction => {
  if (probabilities.length !== post.labels.length || !probabilities.every(Number.isFinite)) {
    throw new Problem(502, 'Bad Gateway', 'the model returned a non-finite or misshapen output; the request was not answered with it', { slug: 'bad-model-output' })
  }
  let best = 0
  if (post.labels.length === 2 && post.threshold !== undefined) best = probabilities[1] >= post.threshold ? 1 : 0
  else for (let i = 1; i < probabilities.length; i++) if (probabilities[i] > probabilities[best]) best = i
  return {
    label: post.labels[best],
    probability: probabilities[best],
    scores: Object.fromEntries(post.labels.map((label, i) => [label, probabilities[i]])),
  }
}

/** The model's answer as one prediction per row, refusing misshapen or non-finite outputs. */
const predictionsOf = (response: InferResponse, model: PredictableModel, rows: number): Prediction[] => {
  const output = response.outputs.find((o) => o.name === model.postprocess.output)
  const classes = model.postprocess.labels.length
  if (!output || output.data.length !== rows * classes) {
    throw new Problem(502, 'Bad Gateway', `the inference tier answered without ${rows} rows of "${model.postprocess.output}"`, { slug: 'bad-model-output' })
  }
  const predictions: Prediction[] = []
  for (let r = 0; r < rows; r++) predictions.push(toPrediction(output.data.slice(r * classes, (r + 1) * classes) as number[], model.postprocess))
  return predictions
}

/**
 * Sends the same rows to the shadow version and records how often it agrees with what the
 * client got, and counts the call (variant "shadow") with its own outcome and duration. The
 * shadow's answer never reaches the client, and its failure never fails the request.
 */
const compareWithShadow = async ({ transport, requestMetrics }: ShadowParts, call: InferCall, served: Prediction[], model: PredictableModel, servedVersion: number): Promise<void> => {
  const base = { msg: 'shadow', model: model.name, version: servedVersion, shadow_version: call.version, request_id: call.requestId }
  const sent = Date.now()
  let code = 200
  try {
    const shadowed = predictionsOf(await transport.infer(call), model, served.length)
    const agreeing = shadowed.filter((p, i) => p.label === served[i].label).length
    const maxDiff = Math.max(...shadowed.map((p, i) => Math.abs(p.probability - served[i].scores[p.label])))
    console.log(JSON.stringify({ level: 'info', ...base, rows: served.length, agreement: agreeing / served.length, max_probability_diff: maxDiff }))
  } catch (err) {
    code = err instanceof Problem ? err.status : 500
    console.log(JSON.stringify({ level: 'warn', ...base, error: err instanceof Error ? err.message : String(err) }))
  }
  // Shadows never go to the fallback tier: an answer is the backend's, a failure the edge's to report.
  requestMetrics.request({ model: model.name, version: String(call.version), variant: 'shadow', code, servedBy: code === 200 ? 'backend' : 'edge', seconds: (Date.now() - sent) / 1e3 })
  await requestMetrics.flushDue()
}

/**
 * Ends `POST /v1/models/{model}/predict`: decodes the tier's answer into one prediction per
 * instance (duplicates fanned back out), starts the shadow comparison when the request has one,
 * and says which tier served it and where the time went.
 */
export const respond = (): Responder<ForwardNeeds & ForwardVariables & { isolate: ShadowParts }> =>
  function respond(c) {
    const model = c.get('model')
    const { version, variant, shadow } = c.get('assignment')
    const { request, response, indexOf, rows: sent, deadlineAt, backendMs } = c.get('inference')
    const receivedAt = c.get('receivedAt')
    const rows = predictionsOf(response, model, sent)
    if (shadow !== undefined) {
      // The client has its answer: the shadow gets a budget as long as the client's, from now.
      const call = {
        model: model.name, version: shadow, request: { ...request, id: `${request.id}:shadow` }, requestId: c.get('requestId'),
        deadlineAt: Date.now() + (deadlineAt - receivedAt), ...callSpan(c, 'shadow'), shadow: true,
      }
      inBackground(c, compareWithShadow(c.get('isolate'), call, rows, model, version))
    }
    const res = c.json({
      model: model.name,
      version: String(version),
      variant,
      request_id: c.get('requestId'),
      predictions: indexOf.map((i) => rows[i]),
    })
    // On the built response: more than one header through c.json() costs a Headers copy.
    res.headers.set(SERVED_BY_HEADER, servedBy(response))
    res.headers.set(HEADERS.serverTiming, `edge;dur=${Date.now() - receivedAt - backendMs}, backend;dur=${backendMs}`)
    return res
  }
