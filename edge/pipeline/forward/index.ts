import type { Context } from 'hono'
import { type FeatureSpec, encodeInstance, specWidth } from '../../../shared/feature-spec.ts'
import { HEADERS } from '../../../shared/headers.ts'
import type { InferRequest, InferResponse } from '../../../shared/protocol.ts'
import { type PredictableModel, predictable } from '../model/catalog.ts'
import { inBackground } from '../../background.ts'
import type { AppEnv } from '../../env.ts'
import type { InferCall, Transport } from './transport.ts'
import { dedupeInstances } from './dedupe.ts'
import { Problem } from '../../problem.ts'
import { deadlineAt } from './deadline.ts'

export interface Prediction {
  label: string
  probability: number
  scores: Record<string, number>
}

export interface PredictHandlerOptions {
  transport: (c: Context<AppEnv>) => Transport
  /** Deadline when the client sends no X-Request-Deadline-Ms. */
  defaultDeadlineMs?: number
  maxDeadlineMs?: number
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

const widths = new WeakMap<FeatureSpec, number>()
/** The spec's tensor width, summed once per spec object. */
const widthOf = (spec: FeatureSpec): number => {
  let width = widths.get(spec)
  if (width === undefined) widths.set(spec, (width = specWidth(spec)))
  return width
}

/**
 * Sends the same rows to the shadow version and records how often it agrees with what the
 * client got. The shadow's answer never reaches the client, and its failure never fails the request.
 */
const compareWithShadow = async (transport: Transport, call: InferCall, served: Prediction[], model: PredictableModel, servedVersion: number): Promise<void> => {
  const base = { msg: 'shadow', model: model.name, version: servedVersion, shadow_version: call.version, request_id: call.requestId }
  try {
    const shadowed = predictionsOf(await transport.infer(call), model, served.length)
    const agreeing = shadowed.filter((p, i) => p.label === served[i].label).length
    const maxDiff = Math.max(...shadowed.map((p, i) => Math.abs(p.probability - served[i].scores[p.label])))
    console.log(JSON.stringify({ level: 'info', ...base, rows: served.length, agreement: agreeing / served.length, max_probability_diff: maxDiff }))
  } catch (err) {
    console.log(JSON.stringify({ level: 'warn', ...base, error: err instanceof Error ? err.message : String(err) }))
  }
}

/**
 * `POST /v1/models/{model}/predict`, after the pipeline has validated and routed it: packs the
 * distinct instances into one tensor, forwards them as one batch, and fans the answers back out.
 */
export const predictHandler = ({ transport, defaultDeadlineMs = 10_000, maxDeadlineMs = 60_000 }: PredictHandlerOptions) =>
  async function predict(c: Context<AppEnv>) {
    const receivedAt = c.get('receivedAt')
    const model = predictable(c.get('model'))
    const { version, variant } = c.get('assignment')
    const { unique, indexOf } = dedupeInstances(c.get('predict').instances)
    const width = widthOf(model.spec)
    const row = new Float32Array(width)
    const data = new Array<number>(unique.length * width)
    for (let u = 0; u < unique.length; u++) {
      encodeInstance(model.spec, unique[u], row)
      for (let k = 0; k < width; k++) data[u * width + k] = row[k]
    }
    const request: InferRequest = {
      id: c.get('requestId'),
      inputs: [{ name: model.spec.input, shape: [unique.length, width], datatype: 'FP32', data }],
      outputs: [{ name: model.postprocess.output }],
    }
    // Counted from arrival: time spent in auth, limits, enrichment and a cold catalog is the client's too.
    const deadline = deadlineAt(c.req.header(HEADERS.deadlineMs), receivedAt, defaultDeadlineMs, maxDeadlineMs)
    const forwarded = Date.now()
    const response = await transport(c).infer({
      model: model.name, version, request, requestId: c.get('requestId'), deadlineAt: deadline, traceparent: c.get('traceparent'),
    }).catch((err: unknown) => {
      // The edge built this tensor from validated instances: a refusal is the edge's fault, not the client's.
      if (err instanceof Problem && err.status === 400) throw new Problem(502, 'Bad Gateway', `the inference tier refused a request the edge built: ${err.detail}`, { slug: 'backend-refused' })
      throw err
    })
    const backendMs = Date.now() - forwarded
    const rows = predictionsOf(response, model, unique.length)
    const { shadow } = c.get('assignment')
    if (shadow !== undefined) {
      // The client has its answer: the shadow gets a budget as long as the client's, from now.
      const shadowDeadline = Date.now() + (deadline - receivedAt)
      const call = { model: model.name, version: shadow, request: { ...request, id: `${request.id}:shadow` }, requestId: c.get('requestId'), deadlineAt: shadowDeadline, traceparent: c.get('traceparent'), shadow: true }
      inBackground(c, compareWithShadow(transport(c), call, rows, model, version))
    }
    const res = c.json({
      model: model.name,
      version: String(version),
      variant,
      request_id: c.get('requestId'),
      predictions: indexOf.map((i) => rows[i]),
    })
    // On the built response: more than one header through c.json() costs a Headers copy (~10 µs in Node).
    res.headers.set('x-served-by', response.parameters?.served_by === 'lambda' ? 'lambda' : 'backend')
    res.headers.set(HEADERS.serverTiming, `edge;dur=${Date.now() - receivedAt - backendMs}, backend;dur=${backendMs}`)
    return res
  }
