import createClient, { type Client } from 'openapi-fetch'
import type { components, paths } from '../../clients/typescript/src/schema.ts'

/**
 * The one typed client the tests call the edge with: openapi-fetch over the types generated from
 * /openapi.json (clients/typescript/src/schema.ts, `npm run openapi:client`), so a request a test builds is checked
 * against the document at compile time. Raw fetch stays only where a test sends what the document
 * refuses (malformed or hostile bodies, a missing required header).
 */

export type Schemas = components['schemas']
export type Instance = Schemas['PredictRequest']['instances'][number]
export type Entity = NonNullable<Schemas['PredictRequest']['entity']>
export type EdgeApi = Client<paths>

/**
 * Where requests go: the URL of a served edge (workerd, Node), or an app called in process
 * (e.g. `(request) => app.request(request, undefined, env)`).
 */
export type Target = string | ((request: Request) => Response | Promise<Response>)

export interface ClientOptions {
  /** Sent as `x-api-key` on every request unless a call names its own. */
  key?: string
  headers?: Record<string, string>
}

export interface CallOptions {
  /** This call's key instead of the client's; `null` sends none. */
  key?: string | null
  headers?: Record<string, string>
  signal?: AbortSignal
}

export interface PredictOptions extends CallOptions {
  model?: string
  entity?: Entity
  /** Pins a version (`X-Model-Version`) instead of the rollout's arm. */
  version?: number | string
}

export const DEFAULT_MODEL = 'credit-risk'

/** Headers of one call: the client's, then the call's key and headers (a `null` key removes the client's). */
const callHeaders = ({ key, headers = {} }: CallOptions): Record<string, string | null> => ({
  ...(key === undefined ? {} : { 'x-api-key': key }),
  ...headers,
})

const withSignal = (signal: AbortSignal | undefined) => (signal ? { signal } : {})

/**
 * An answer as openapi-fetch gives it (`data` typed by the document on success, `error` the
 * problem otherwise, the `response` itself), plus `status`, `headers` and `body` (whichever of the
 * two came) for the many assertions that read those.
 */
export type Answer<R extends { response: Response }> = R & {
  status: number
  headers: Headers
  body: NonNullable<R extends { data?: infer D } ? D : never>
}

const answered = async <R extends { response: Response; data?: unknown; error?: unknown }>(pending: Promise<R>): Promise<Answer<R>> => {
  const result = await pending
  return { ...result, status: result.response.status, headers: result.response.headers, body: (result.data ?? result.error) as Answer<R>['body'] }
}

export const edgeClient = (target: Target, { key, headers = {} }: ClientOptions = {}) => {
  const api: EdgeApi = createClient<paths>({
    ...(typeof target === 'string' ? { baseUrl: target } : { baseUrl: 'http://edge.test', fetch: async (request: Request) => target(request) }),
    headers: { ...(key ? { 'x-api-key': key } : {}), ...headers },
  })
  const rolloutPath = (model: string) => ({ params: { path: { model } } })
  return {
    api,
    /** POST /v1/models/{model}/predict with these rows (or this whole body); `data` is the typed prediction, `error` the problem. */
    predict: (rows: Instance[] | Schemas['PredictRequest'], { model = DEFAULT_MODEL, entity, version, signal, ...call }: PredictOptions = {}) =>
      answered(api.POST('/v1/models/{model}/predict', {
        params: { path: { model } },
        body: Array.isArray(rows) ? { instances: rows, ...(entity ? { entity } : {}) } : { ...rows, ...(entity ? { entity } : {}) },
        headers: { ...(version === undefined ? {} : { 'x-model-version': String(version) }), ...callHeaders(call) },
        ...withSignal(signal),
      })),
    /** POST /v2/models/{model}[/versions/{version}]/infer: Open Inference Protocol tensors, passed through to the backend. */
    predictTensor: (body: Schemas['InferRequest'], { model = DEFAULT_MODEL, version, signal, ...call }: Omit<PredictOptions, 'entity'> = {}) =>
      answered(version === undefined
        ? api.POST('/v2/models/{model}/infer', { params: { path: { model } }, body, headers: callHeaders(call), ...withSignal(signal) })
        : api.POST('/v2/models/{model}/versions/{version}/infer', { params: { path: { model, version: Number(version) } }, body, headers: callHeaders(call), ...withSignal(signal) })),
    /** POST /v1/feedback: ground-truth labels for earlier predictions. */
    feedback: (body: Schemas['FeedbackRequest'], call: CallOptions = {}) =>
      answered(api.POST('/v1/feedback', { body, headers: callHeaders(call), ...withSignal(call.signal) })),
    rollout: {
      get: (model = DEFAULT_MODEL, call: CallOptions = {}) =>
        answered(api.GET('/v1/models/{model}/rollout', { ...rolloutPath(model), headers: callHeaders(call), ...withSignal(call.signal) })),
      /** Replaces the rollout; `ifMatch` is the ETag the change is made against. */
      put: (rollout: Schemas['RolloutPut'], ifMatch: string, model = DEFAULT_MODEL, call: CallOptions = {}) =>
        answered(api.PUT('/v1/models/{model}/rollout', {
          params: { path: { model }, header: { 'If-Match': ifMatch } },
          body: rollout,
          headers: callHeaders(call),
          ...withSignal(call.signal),
        })),
    },
  }
}

export type EdgeClient = ReturnType<typeof edgeClient>

/** Replaces the rollout against whatever revision is stored now (GET's ETag, then PUT): what a test does between scenarios. */
export const replaceRollout = async (edge: EdgeClient, rollout: Schemas['RolloutPut'], model = DEFAULT_MODEL, call: CallOptions = {}) => {
  const current = await edge.rollout.get(model, call)
  return edge.rollout.put(rollout, current.headers.get('etag')!, model, call)
}
