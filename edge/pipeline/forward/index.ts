import { type FeatureSpec, encodeInstance, specWidth } from '../../../shared/feature-spec.ts'
import type { InferRequest, InferResponse } from '../../../shared/protocol.ts'
import { Problem } from '../../problem.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'
import { type Prediction, predictionsOf } from '../respond/predictions.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { RouteVariables } from '../route/index.ts'
import type { Stage } from '../stage.ts'
import type { TraceVariables } from '../trace/index.ts'
import type { PredictInput, ValidateVariables } from '../validate/index.ts'
import type { CanaryFallbackOptions } from './canary-fallback.ts'
import { requestDeadline } from './deadline.ts'
import { type Deduped, dedupeInstances } from './dedupe.ts'
import { routedCall } from './routed-call.ts'
import type { Transport } from '../../backend-client/transport.ts'
import type { GroundTruthStore } from '../../stores/ground-truth/ground-truth-store.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'

/** What the inference tier answered for this request's rows, for `respond` to decode. */
export interface Inference {
  /** The tensor request as sent: one row per distinct instance. */
  request: InferRequest
  /** Absent when the edge prediction cache answered every row. */
  response?: InferResponse
  /** One per row sent, decoded from `response` (finite and well-shaped, or the call failed). */
  predictions: Prediction[]
  /** For each instance of the request, the row of its answer. */
  indexOf: number[]
  /** Distinct rows sent. */
  rows: number
  /** When the caller stops waiting (epoch ms). */
  deadlineAt: number
  /** Time spent waiting on the inference tier. */
  backendMs: number
}

export interface ForwardVariables {
  inference: Inference
}

/**
 * What the edge prediction cache (edge/pipeline/cache) found for a request's distinct rows under
 * `version`: forward sends only the rows it has no answer for (none when it has them all).
 */
export interface CachedAnswer {
  version: number
  predictions: Array<Prediction | undefined>
}

export type ForwardNeeds = RequestIdVariables &
  TraceVariables &
  ValidateVariables &
  RouteVariables & { model: PredictableModel; isolate: { transport: Transport; requestMetrics: RequestMetrics; groundTruth: GroundTruthStore }; cached?: CachedAnswer }

export interface ForwardOptions {
  /** How a canary's failed call falls back to stable. */
  canaryFallback?: CanaryFallbackOptions
}

const widths = new WeakMap<FeatureSpec, number>()
/** The spec's tensor width, summed once per spec object. */
const widthOf = (spec: FeatureSpec): number => {
  let width = widths.get(spec)
  if (width === undefined) widths.set(spec, (width = specWidth(spec)))
  return width
}

/** The distinct instances of a request encoded as the model's tensor rows, `width` values each, one after another. */
export const encodeBatch = (model: PredictableModel, instances: PredictInput['instances']): Deduped<PredictInput['instances'][number]> & { width: number; data: number[] } => {
  const { unique, indexOf } = dedupeInstances(instances)
  const width = widthOf(model.spec)
  const row = new Float32Array(width)
  const data = new Array<number>(unique.length * width)
  for (let u = 0; u < unique.length; u++) {
    encodeInstance(model.spec, unique[u], row)
    for (let k = 0; k < width; k++) data[u * width + k] = row[k]
  }
  return { unique, indexOf, width, data }
}

/**
 * Packs the distinct instances into one tensor and sends it as one batch to the version the
 * request was routed to, through the isolate's transport (HTTP backend, circuit breaker, Lambda
 * fallback), within the caller's deadline counted from arrival, and decodes the answer: a
 * canary's error or non-finite output is retried on stable (`withCanaryFallback`); rows the
 * edge cache answered are not sent. A call left
 * unanswered (edge timeout, open circuit, unreachable) is counted against its version.
 */
export const forward = ({ canaryFallback }: ForwardOptions = {}): Stage<ForwardNeeds, ForwardVariables> =>
  async function forward(c, next) {
    const model = c.get('model')
    const { unique, indexOf, width, data } = encodeBatch(model, c.get('predict').instances)
    const requestId = c.get('requestId')
    const request: InferRequest = {
      id: requestId,
      inputs: [{ name: model.spec.input, shape: [unique.length, width], datatype: 'FP32', data }],
      outputs: [{ name: model.postprocess.output }],
    }
    const deadline = requestDeadline(c)
    const forwarded = Date.now()
    const { transport } = c.get('isolate')
    const call = (sent: InferRequest, rows: number) => routedCall(c, deadline, async (version, deadlineAt, traceparent) => {
      const answer = await transport.infer({ model: model.name, version, request: sent, requestId, deadlineAt, traceparent }).catch((err: unknown) => {
        // The edge built this tensor from validated instances: a refusal is the edge's fault, not the client's.
        if (err instanceof Problem && err.status === 400) throw new Problem(502, 'Bad Gateway', `the inference tier refused a request the edge built: ${err.detail}`, { slug: 'backend-refused' })
        throw err
      })
      return { response: answer as InferResponse | undefined, predictions: predictionsOf(answer, model, rows) }
    }, canaryFallback)
    // The request keeps every row: a shadow compares them all, cached ones too. Only the rows the
    // edge cache did not answer are sent, and merged back in order.
    const cached = c.get('cached')
    const missing = cached ? cached.predictions.flatMap((p, u) => (p === undefined ? [u] : [])) : []
    let answered: { response: InferResponse | undefined; predictions: Prediction[] }
    if (cached === undefined) answered = await call(request, unique.length)
    else if (missing.length === 0) answered = { response: undefined, predictions: cached.predictions as Prediction[] }
    else {
      const sent = await call({ ...request, inputs: [{ ...request.inputs[0], shape: [missing.length, width], data: missing.flatMap((u) => data.slice(u * width, (u + 1) * width)) }] }, missing.length)
      const merged = [...cached.predictions]
      missing.forEach((u, i) => (merged[u] = sent.predictions[i]))
      // Rerouted to another version meanwhile: the cached rows are the old version's, so every row goes to the new one.
      answered = c.get('assignment').version === cached.version ? { response: sent.response, predictions: merged as Prediction[] } : await call(request, unique.length)
    }
    const { response, predictions } = answered
    c.set('inference', { request, response, predictions, indexOf, rows: unique.length, deadlineAt: deadline, backendMs: response ? Date.now() - forwarded : 0 })
    await next()
  }
