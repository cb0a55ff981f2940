import { ProblemError } from './errors.ts'
import { transport, type CallOptions, type TransportOptions } from './http.ts'
import type { components, paths } from './schema.ts'

export { AbortedError, DeadlineExceededError, EdgeInferError, NetworkError, ProblemError, type FieldError, type ProblemBody } from './errors.ts'
export type { CallOptions, RetryOptions, TransportOptions as ClientOptions } from './http.ts'
export type { components, paths }

type Schemas = components['schemas']
export type PredictRequest = Schemas['PredictRequest']
export type PredictResponse = Schemas['PredictResponse']
export type InferRequest = Schemas['InferRequest']
export type InferResponse = Schemas['InferResponse']
export type FeedbackItem = Exclude<Schemas['FeedbackRequest'], unknown[]>
export type FeedbackResponse = Schemas['FeedbackResponse']
export type ModelQuality = Schemas['ModelQuality']
export type RolloutState = Schemas['RolloutState']
export type RolloutStored = Schemas['RolloutStored']
export type RolloutPut = Schemas['RolloutPut']
export type ModelList = Schemas['ModelList']
export type ModelDescription = Schemas['ModelDescription']

/** Most items one `POST /v1/feedback` carries (the route's limit); longer lists go as several requests. */
export const FEEDBACK_BATCH = 1_000

export interface PredictOptions extends CallOptions {
  /** Pins a version (X-Model-Version) instead of the rollout's arm. */
  version?: number | string
  /** X-Experiment-Key: the sticky arm's key when the body names no entity. */
  experimentKey?: string
}

/** A rollout's state with the ETag it was read or written at: the If-Match of the next change. */
export interface Versioned<T> {
  state: T
  etag: string
}

export interface UpdateOptions extends CallOptions {
  /** Read-change-write rounds before a 412 is given up on (default 5). */
  rounds?: number
}

/** The options of each request of a call made of several: the call's `timeoutMs` is one deadline over all of them. */
const sharedDeadline = (call: CallOptions = {}): (() => CallOptions) => {
  const { timeoutMs } = call
  if (timeoutMs === undefined) return () => call
  const deadlineAt = Date.now() + timeoutMs
  return () => ({ ...call, timeoutMs: deadlineAt - Date.now() })
}

const path = (model: string) => `/v1/models/${encodeURIComponent(model)}`

/**
 * A client of the edge's API: typed by the generated `/openapi.json` types, fetch only (browsers,
 * Node, Workers, React Native). Every call sends a request id and, with `timeoutMs`, its deadline;
 * failures are thrown as `ProblemError` (the edge's problem+json), `DeadlineExceededError`,
 * `AbortedError` or `NetworkError`. Retries: see docs/client.md.
 */
export const createClient = (options: TransportOptions) => {
  const send = transport(options)

  const predictHeaders = ({ version, experimentKey }: PredictOptions) => ({
    'x-model-version': version === undefined ? undefined : String(version),
    'x-experiment-key': experimentKey,
  })

  const getRollout = async (model: string, call?: CallOptions): Promise<Versioned<RolloutState>> => {
    const { body, headers } = await send<RolloutState>({ method: 'GET', path: `${path(model)}/rollout`, retry: 'safe' }, call)
    return { state: body, etag: headers.get('etag') ?? '' }
  }

  const putRollout = async (model: string, rollout: RolloutPut, ifMatch: string, call?: CallOptions): Promise<Versioned<RolloutStored>> => {
    // If-Match makes a resend safe: a PUT that landed answers the resend 412, never a second write.
    const { body, headers } = await send<RolloutStored>({ method: 'PUT', path: `${path(model)}/rollout`, body: rollout, headers: { 'if-match': ifMatch }, retry: 'safe' }, call)
    return { state: body, etag: headers.get('etag') ?? '' }
  }

  return {
    /** `POST /v1/models/{model}/predict`. Retried only on 429, 503 or a refused connection: the prediction never ran. */
    predict: async (model: string, request: PredictRequest, call: PredictOptions = {}): Promise<PredictResponse> =>
      (await send<PredictResponse>({ method: 'POST', path: `${path(model)}/predict`, body: request, headers: predictHeaders(call), retry: 'unprocessed' }, call)).body,

    /** `POST /v2/models/{model}[/versions/{version}]/infer`: Open Inference Protocol tensors; retried like predict. */
    predictTensor: async (model: string, request: InferRequest, call: Omit<PredictOptions, 'experimentKey'> = {}): Promise<InferResponse> => {
      const at = `/v2/models/${encodeURIComponent(model)}${call.version === undefined ? '' : `/versions/${encodeURIComponent(String(call.version))}`}/infer`
      return (await send<InferResponse>({ method: 'POST', path: at, body: request, retry: 'unprocessed' }, call)).body
    },

    /**
     * `POST /v1/feedback` in batches of up to FEEDBACK_BATCH items, sent in order: the answer holds every
     * item's result in the order given and the counts over all batches. A resend is safe (a label is
     * counted once), so a failed batch can be sent again as it is.
     */
    feedback: async (items: FeedbackItem | readonly FeedbackItem[], call?: CallOptions): Promise<FeedbackResponse> => {
      const all = Array.isArray(items) ? items : [items as FeedbackItem]
      const next = sharedDeadline(call)
      const total: FeedbackResponse = { accepted: 0, duplicate: 0, unknown_or_expired: 0, invalid_label: 0, invalid_index: 0, results: [] }
      for (let at = 0; at < all.length; at += FEEDBACK_BATCH) {
        const { body } = await send<FeedbackResponse>({ method: 'POST', path: '/v1/feedback', body: all.slice(at, at + FEEDBACK_BATCH), retry: 'safe' }, next())
        for (const r of body.results) total[r.result]++
        total.results.push(...body.results)
      }
      return total
    },

    /** `GET /v1/models/{model}/quality`: realized quality from feedback beside the label-free estimate, per version. */
    quality: async (model: string, { window, ...call }: CallOptions & { window?: string } = {}): Promise<ModelQuality> =>
      (await send<ModelQuality>({ method: 'GET', path: `${path(model)}/quality`, query: { window }, retry: 'safe' }, call)).body,

    models: {
      /** `GET /v1/models`. */
      list: async (call?: CallOptions): Promise<ModelList> => (await send<ModelList>({ method: 'GET', path: '/v1/models', retry: 'safe' }, call)).body,
      /** `GET /v1/models/{model}`: versions, rollout arms, the feature spec and labels. */
      describe: async (model: string, call?: CallOptions): Promise<ModelDescription> =>
        (await send<ModelDescription>({ method: 'GET', path: path(model), retry: 'safe' }, call)).body,
    },

    rollout: {
      /** `GET /v1/models/{model}/rollout` with its ETag. */
      get: getRollout,
      /** `PUT /v1/models/{model}/rollout` made against `ifMatch` (412 ProblemError when the rollout changed since). */
      put: putRollout,
      /**
       * Read, change, write: `change` gets the stored state and answers the rollout to put. On 412 (someone
       * wrote in between) it reads again and calls `change` on what is stored now, up to `rounds` times.
       */
      update: async (model: string, change: (current: RolloutState) => RolloutPut | Promise<RolloutPut>, { rounds = 5, ...call }: UpdateOptions = {}): Promise<Versioned<RolloutStored>> => {
        const next = sharedDeadline(call)
        for (let round = 1; ; round++) {
          const current = await getRollout(model, next())
          try {
            return await putRollout(model, await change(current.state), current.etag, next())
          } catch (err) {
            if (!(err instanceof ProblemError && err.status === 412) || round >= rounds) throw err
          }
        }
      },
    },
  }
}

export type EdgeInferClient = ReturnType<typeof createClient>
