import { z } from 'zod'
import { rolloutSchema } from '../rollout/rollout.ts'
import { requestSchemas, responseSchemas, type RequestSchemaName, type ResponseSchemaName } from './schemas.ts'

/** The JSON the document is made of; every value is plain data, so it serialises as it is. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
type JsonObject = { [key: string]: Json }

export interface OpenApiDocument {
  openapi: '3.1.0'
  info: JsonObject
  servers: JsonObject[]
  tags: JsonObject[]
  security: JsonObject[]
  paths: Record<string, Record<string, Operation>>
  components: JsonObject
}

export interface Operation {
  operationId: string
  summary: string
  description?: string
  tags: string[]
  security: JsonObject[]
  parameters?: Json[]
  requestBody?: JsonObject
  responses: Record<string, JsonObject>
  [extension: `x-${string}`]: Json
}

const SCHEMA_URI = (id: string) => `#/components/schemas/${id}`

/** `step_started_at` defaults to the time of the PUT: its "default" would be the time the document was built. */
const stepStartedAt = rolloutSchema.shape.canary.unwrap().shape.step_started_at

/**
 * The components of one direction. Requests are described as clients send them (defaulted fields
 * optional), responses as the edge answers (defaulted fields always there).
 */
const componentsOf = (schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, JsonObject> => {
  const registry = z.registry<{ id: string }>()
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id })
  const { schemas: generated } = z.toJSONSchema(registry, {
    io,
    uri: SCHEMA_URI,
    // Nothing the document names is unrepresentable; should one appear, say so at build time.
    unrepresentable: 'throw',
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema === stepStartedAt) {
        delete jsonSchema.default
        jsonSchema.description = 'epoch ms when the current weight was set; a PUT without it starts the step now'
      }
    },
  })
  return Object.fromEntries(
    Object.entries(generated).map(([id, schema]) => {
      // A component is a schema inside the document, not a document of its own.
      const { $schema: _schema, $id: _id, ...rest } = schema as JsonObject
      return [id, rest]
    }),
  )
}

const ref = (name: RequestSchemaName | ResponseSchemaName): JsonObject => ({ $ref: SCHEMA_URI(name) })

// ---- headers -----------------------------------------------------------------------------------

const integerHeader = (description: string): JsonObject => ({ description, schema: { type: 'integer', minimum: 0 } })
const stringHeader = (description: string): JsonObject => ({ description, schema: { type: 'string' } })

const headers: Record<string, JsonObject> = {
  XRequestId: stringHeader('the request id (the caller\'s X-Request-Id when valid, else generated); quote it when reporting a problem'),
  RateLimitLimit: integerHeader('requests this API key may make per window (draft-ietf-httpapi-ratelimit-headers)'),
  RateLimitRemaining: integerHeader('requests left in the current window'),
  RateLimitReset: integerHeader('seconds until the window has room again'),
  RetryAfter: integerHeader('seconds to wait before retrying'),
  WwwAuthenticate: stringHeader('the Bearer challenge (RFC 6750), with error="invalid_token" or "insufficient_scope" where it applies'),
  ETag: stringHeader('the rollout revision as a strong ETag, "r<revision>": send it back in If-Match'),
  XModelVersion: stringHeader('the model version that answered'),
  XVariant: stringHeader('the rollout arm the request was assigned to'),
  XServedBy: { description: 'which inference tier answered', schema: { type: 'string', enum: ['backend', 'lambda'] } },
  XCanaryFallback: { description: 'present (1) when the canary arm failed and the request was answered by the stable arm instead', schema: { type: 'string', enum: ['1'] } },
  ServerTiming: stringHeader('edge;dur=<ms>, backend;dur=<ms>'),
  XInputNormalized: integerHeader('how many input values the edge repaired (whitespace, percent-encoding, numeric strings, …) before validating'),
  XFeaturesDegraded: { description: '"1" when entity features were unavailable and defaults were used', schema: { type: 'string', enum: ['1'] } },
}
type HeaderName = keyof typeof headers
const headerField: Record<HeaderName, string> = {
  XRequestId: 'X-Request-Id',
  RateLimitLimit: 'RateLimit-Limit',
  RateLimitRemaining: 'RateLimit-Remaining',
  RateLimitReset: 'RateLimit-Reset',
  RetryAfter: 'Retry-After',
  WwwAuthenticate: 'WWW-Authenticate',
  ETag: 'ETag',
  XModelVersion: 'X-Model-Version',
  XVariant: 'X-Variant',
  XServedBy: 'X-Served-By',
  XCanaryFallback: 'X-Canary-Fallback',
  ServerTiming: 'Server-Timing',
  XInputNormalized: 'X-Input-Normalized',
  XFeaturesDegraded: 'X-Features-Degraded',
}
/** Every response carries X-Request-Id; the rest as named. */
const headerRefs = (names: readonly HeaderName[]): JsonObject =>
  Object.fromEntries((['XRequestId', ...names] as HeaderName[]).map((name) => [headerField[name], { $ref: `#/components/headers/${name}` }]))
const RATE_LIMIT: HeaderName[] = ['RateLimitLimit', 'RateLimitRemaining', 'RateLimitReset']

// ---- parameters ----------------------------------------------------------------------------------

const parameters: Record<string, JsonObject> = {
  Model: { name: 'model', in: 'path', required: true, description: 'the model\'s name, e.g. credit-risk', schema: { type: 'string' } },
  Version: { name: 'version', in: 'path', required: true, description: 'a served version', schema: { type: 'integer', minimum: 1 } },
  ModelVersionPin: { name: 'X-Model-Version', in: 'header', required: false, description: 'pin a version instead of the rollout\'s arm (a pinnable one: GET /v1/models/{model})', schema: { type: 'string', pattern: '^[1-9][0-9]{0,8}$' } },
  ExperimentKey: { name: 'X-Experiment-Key', in: 'header', required: false, description: 'the sticky key of the arm assignment when the request names no entity', schema: { type: 'string' } },
  DeadlineMs: { name: 'X-Request-Deadline-Ms', in: 'header', required: false, description: 'how long the caller waits, in whole milliseconds (default 10000)', schema: { type: 'integer', minimum: 1, maximum: 60_000 } },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    required: true,
    description: 'the ETag of the GET this PUT replaces, a list of them, or * for whatever revision is stored: 428 without it, 412 when it names none of the current revision',
    schema: { type: 'string' },
  },
  ConsoleFile: { name: 'file', in: 'path', required: true, description: 'a built file\'s name, as the console page names it', schema: { type: 'string' } },
  HistoryLimit: { name: 'limit', in: 'query', required: false, description: 'how many entries, newest first', schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 } },
  DriftWindow: { name: 'window', in: 'query', required: false, description: 'minutes (90) or a duration (15m, 2h), at most 3 h', schema: { type: 'string', default: '15m' } },
  QualityWindow: { name: 'window', in: 'query', required: false, description: 'the last minutes or hours of label arrivals (15m, 6h), at most 24 h', schema: { type: 'string', pattern: '^[1-9][0-9]{0,4}(m|h)$', default: '60m' } },
}
type ParameterName = keyof typeof parameters
const param = (name: ParameterName): JsonObject => ({ $ref: `#/components/parameters/${name}` })

// ---- responses -------------------------------------------------------------------------------------

const PROBLEMS = {
  400: 'Bad Request: the body, a header or a parameter is invalid (field errors in `errors`)',
  401: 'Unauthorized: no API key, a malformed one, or one that is not recognized',
  403: 'Forbidden: the API key lacks the scope this operation needs',
  404: 'Not Found: no such model or version (or, for predict, a model without a feature spec)',
  412: 'Precondition Failed: If-Match names no ETag of the current revision; read it again and retry',
  413: 'Content Too Large: the body is over the edge\'s limit (MAX_BODY_BYTES) or the tier\'s',
  415: 'Unsupported Media Type: the body must be uncompressed application/json',
  422: 'Unprocessable Content: the entity has no stored value of a required feature without a default',
  428: 'Precondition Required: a rollout PUT needs If-Match',
  429: 'Too Many Requests: the API key\'s rate limit, or the inference tier\'s overload',
  500: 'Internal Server Error: the edge failed; the details are in its log under the request id',
  502: 'Bad Gateway: the inference tier failed or answered with something the edge could not use',
  503: 'Service Unavailable: the inference tier, a store or the monitor is unavailable or not ready',
  504: 'Gateway Timeout: no answer within the request\'s deadline',
} as const
type ProblemStatus = keyof typeof PROBLEMS

const problemHeaders: Partial<Record<ProblemStatus, HeaderName[]>> = {
  401: ['WwwAuthenticate'],
  403: ['WwwAuthenticate'],
  429: ['RetryAfter', ...RATE_LIMIT],
  503: ['RetryAfter'],
}

/** Problem responses are components, one per status and flavour (with `error` on /v2). */
const responses: Record<string, JsonObject> = {}
const problemResponse = (status: ProblemStatus, oip: boolean): JsonObject => {
  const name = `${oip ? 'OipProblem' : 'Problem'}${status}`
  responses[name] ??= {
    description: PROBLEMS[status],
    headers: headerRefs(problemHeaders[status] ?? []),
    content: { 'application/problem+json': { schema: ref(oip ? 'OipProblem' : 'Problem') } },
  }
  return { $ref: `#/components/responses/${name}` }
}

const ok = (description: string, schema: JsonObject, headerNames: readonly HeaderName[] = [], type = 'application/json'): JsonObject => ({
  description,
  headers: headerRefs(headerNames),
  content: { [type]: { schema } },
})

/** Who may call: the `predict` or `admin` scope by API key, or nobody's key (probes). */
type Guard = 'predict' | 'admin' | 'feedback' | 'none'
const SECURITY: JsonObject[] = [{ bearer: [] }, { apiKey: [] }]
/** What a guarded operation can be refused with before its handler runs: auth, its key store, the limiter, the edge itself. */
const GUARD_PROBLEMS: ProblemStatus[] = [401, 403, 429, 500, 503]

interface OperationSpec {
  operationId: string
  summary: string
  description?: string
  tag: string
  guard: Guard
  parameters?: ParameterName[]
  body?: JsonObject
  /** The 2xx (and, for readiness, the non-problem 503) answers. */
  answers: Record<string, JsonObject>
  problems?: ProblemStatus[]
}

const operation = (path: string, { operationId, summary, description, tag, guard, parameters: names = [], body, answers, problems = [] }: OperationSpec): Operation => {
  const oip = path.startsWith('/v2/')
  const statuses = [...new Set([...(guard === 'none' ? [] : GUARD_PROBLEMS), ...problems])].filter((s) => !(s in answers)).sort((a, b) => a - b)
  return {
    operationId,
    summary,
    ...(description ? { description } : {}),
    tags: [tag],
    security: guard === 'none' ? [] : SECURITY,
    ...(guard === 'none' ? {} : { 'x-scope': guard }),
    ...(names.length ? { parameters: names.map(param) } : {}),
    ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body } } } } : {}),
    responses: { ...answers, ...Object.fromEntries(statuses.map((s) => [String(s), problemResponse(s, oip)])) },
  }
}

/** A body the edge reads: 413/415 from the body checks come first. */
const BODY_PROBLEMS: ProblemStatus[] = [400, 413, 415]
/** What the inference tier's answer can become on the way back. */
const TIER_PROBLEMS: ProblemStatus[] = [404, 502, 503, 504]

const readinessAnswers = (schema: ResponseSchemaName, what: string): Record<string, JsonObject> => ({
  '200': ok(`${what} is ready (the backend's answer)`, ref(schema)),
  '503': {
    description: `${what} is not ready: the backend's \`{"ready": false}\`, or a problem when the backend could not be asked`,
    headers: headerRefs(['RetryAfter']),
    content: { 'application/json': { schema: ref(schema) }, 'application/problem+json': { schema: ref('OipProblem') } },
  },
})

const inferOperation = (operationId: string, summary: string, names: ParameterName[]): OperationSpec => ({
  operationId,
  summary,
  description: 'Open Inference Protocol (KServe V2) pass-through for tensor clients, for every model the backend serves, with or without a feature spec: the same auth, limits and routing as predict. The backend checks the tensors.',
  tag: 'inference',
  guard: 'predict',
  parameters: [...names, 'ModelVersionPin', 'ExperimentKey', 'DeadlineMs'],
  body: ref('InferRequest'),
  answers: { '200': ok('the backend\'s infer response', ref('InferResponse'), ['XModelVersion', 'XVariant', 'XServedBy', 'XCanaryFallback', ...RATE_LIMIT]) },
  problems: [...BODY_PROBLEMS, ...TIER_PROBLEMS],
})

const metadataOperation = (operationId: string, summary: string, names: ParameterName[]): OperationSpec => ({
  operationId,
  summary,
  tag: 'inference',
  guard: 'predict',
  parameters: names,
  answers: { '200': ok('the backend\'s model metadata', ref('ModelMetadata'), RATE_LIMIT) },
  problems: [400, ...TIER_PROBLEMS],
})

const readyOperation = (operationId: string, summary: string, names: ParameterName[]): OperationSpec => ({
  operationId,
  summary,
  tag: 'inference',
  guard: 'predict',
  parameters: names,
  answers: readinessAnswers('ModelReady', 'the model'),
  problems: [400, 404, 502, 504],
})

/** Every operation the app serves, by path and method (`edge/app.ts`); the route-table test holds the two equal. */
const operations: Record<string, Record<string, OperationSpec>> = {
  '/healthz': {
    get: { operationId: 'getHealth', summary: 'Edge liveness', description: 'Answers from the edge alone, with no key: for probes.', tag: 'meta', guard: 'none', answers: { '200': ok('the edge is up', ref('Health')) }, problems: [500] },
  },
  '/openapi.json': {
    get: { operationId: 'getOpenApiDocument', summary: 'This document', tag: 'meta', guard: 'none', answers: { '200': ok('the OpenAPI 3.1 document of the edge API', { type: 'object' }) }, problems: [500] },
  },
  '/metrics': {
    get: {
      operationId: 'getMetrics',
      summary: 'Prometheus counters of input fixes per API key',
      tag: 'admin',
      guard: 'admin',
      answers: { '200': ok('Prometheus text exposition', { type: 'string' }, RATE_LIMIT, 'text/plain; version=0.0.4') },
    },
  },
  '/v1/backend/stats': {
    get: {
      operationId: 'getBackendStats',
      summary: 'The backend\'s queues, batches, refusals and execution provider per model version',
      description: 'Read from the backend\'s Prometheus metrics (BACKEND_URL, with INFER_TOKEN), at most 5 s; counts since the backend started. What the operator console\'s Backend view shows.',
      tag: 'admin',
      guard: 'admin',
      answers: { '200': ok('the backend\'s stats', ref('BackendStats'), RATE_LIMIT) },
      problems: [502],
    },
  },
  '/console': {
    get: { operationId: 'getConsole', summary: 'The operator console page', description: 'No key: the page asks for an admin key and calls the admin API with it. Served with a strict Content-Security-Policy.', tag: 'meta', guard: 'none', answers: { '200': ok('the console', { type: 'string' }, [], 'text/html') }, problems: [500] },
  },
  '/console/assets/{file}': {
    get: { operationId: 'getConsoleAsset', summary: 'A script, stylesheet or icon of the console', tag: 'meta', guard: 'none', parameters: ['ConsoleFile'], answers: { '200': ok('the file', { type: 'string' }, [], 'text/javascript') }, problems: [404, 500] },
  },
  '/v1/models': {
    get: {
      operationId: 'listModels',
      summary: 'Models a client may call',
      tag: 'catalog',
      guard: 'predict',
      answers: { '200': ok('the models the backend serves', ref('ModelList'), RATE_LIMIT) },
    },
  },
  '/v1/models/{model}': {
    get: {
      operationId: 'describeModel',
      summary: 'What a client needs to call a model',
      description: 'Versions and rollout arms; the feature spec and labels when the model has them (predict).',
      tag: 'catalog',
      guard: 'predict',
      parameters: ['Model'],
      answers: { '200': ok('the model', ref('ModelDescription'), RATE_LIMIT) },
      problems: [404],
    },
  },
  '/v1/models/{model}/predict': {
    post: {
      operationId: 'predict',
      summary: 'Predict labels for instances',
      description: 'The body is checked against the model\'s feature spec after input normalization; entity features are filled in from the feature store; the request is routed to an arm of the rollout (sticky by entity id, X-Experiment-Key or request id) unless X-Model-Version pins a version.',
      tag: 'predict',
      guard: 'predict',
      parameters: ['Model', 'ModelVersionPin', 'ExperimentKey', 'DeadlineMs'],
      body: ref('PredictRequest'),
      answers: {
        '200': ok('one prediction per instance', ref('PredictResponse'), ['XModelVersion', 'XVariant', 'XServedBy', 'XCanaryFallback', 'ServerTiming', 'XInputNormalized', 'XFeaturesDegraded', ...RATE_LIMIT]),
      },
      problems: [...BODY_PROBLEMS, 422, ...TIER_PROBLEMS],
    },
  },
  '/v1/models/{model}/rollout': {
    get: {
      operationId: 'getRollout',
      summary: 'The rollout of a model: arms and weights, pins, shadow, canary',
      tag: 'rollout',
      guard: 'admin',
      parameters: ['Model'],
      answers: { '200': ok('the rollout, stored or the default one', ref('RolloutState'), ['ETag', ...RATE_LIMIT]) },
      problems: [404],
    },
    put: {
      operationId: 'putRollout',
      summary: 'Replace the rollout (compare-and-set with If-Match)',
      description: 'Replaces the whole rollout atomically. A layout left out is derived from the stored one, so a weight change moves only users between the arms whose weights changed. A rollout with a `canary` hands that arm to the controller.',
      tag: 'rollout',
      guard: 'admin',
      parameters: ['Model', 'IfMatch'],
      body: ref('RolloutPut'),
      answers: { '200': ok('stored', ref('RolloutStored'), ['ETag', ...RATE_LIMIT]) },
      problems: [...BODY_PROBLEMS, 404, 412, 428],
    },
  },
  '/v1/models/{model}/rollout/history': {
    get: {
      operationId: 'getRolloutHistory',
      summary: 'Rollout decisions (controller) and changes (PUT), newest first',
      tag: 'rollout',
      guard: 'admin',
      parameters: ['Model', 'HistoryLimit'],
      answers: { '200': ok('the history', ref('RolloutHistory'), RATE_LIMIT) },
      problems: [400],
    },
  },
  '/v1/models/{model}/versions/{version}/drift': {
    get: {
      operationId: 'getDriftReport',
      summary: 'The backend\'s drift report of a version',
      description: 'Per-feature statistics, thresholds and verdicts, passed through from the backend, with the realized quality of the feedback labels of the same minutes beside the backend\'s label-free estimate.',
      tag: 'rollout',
      guard: 'admin',
      parameters: ['Model', 'Version', 'DriftWindow'],
      answers: { '200': ok('the drift report', ref('DriftReport'), RATE_LIMIT) },
      problems: [400, 404, 502],
    },
  },
  '/v1/models/{model}/quality': {
    get: {
      operationId: 'getModelQuality',
      summary: 'Realized quality from feedback beside the label-free estimate, per version',
      description: 'Per served version: accuracy (by the model threshold), binned ROC AUC, log loss and ECE of the feedback labels that arrived in the window, merged across isolates; the backend\'s CBPE estimate of the same figures for the window, when its drift report carries one; label delays; calls the backend never answered.',
      tag: 'rollout',
      guard: 'admin',
      parameters: ['Model', 'QualityWindow'],
      answers: { '200': ok('the quality of each version', ref('ModelQuality'), RATE_LIMIT) },
      problems: [400, 404, 502],
    },
  },
  '/v1/feedback': {
    post: {
      operationId: 'postFeedback',
      summary: 'Ground-truth labels for served predictions',
      description: 'One item `{request_id, label, index?}` or an array of up to 1000, labels arriving any time within the TTL (FEEDBACK_TTL_SECONDS, default 30 days) for models with feedback on (FEEDBACK_MODELS). A request id names a prediction made by a key of the caller\'s tenant (the key entry\'s `tenant`, else its name); a key that also holds the admin scope may name another tenant per item (`tenant`), any other key naming one is refused with 403. `index` names the instance and may be left out only for a request with one. A well-formed body is answered 200 with a result per item, in order, and the count of each: accepted (counted once, now or by an earlier send of the same label), duplicate (the instance holds another label; the first stands), unknown_or_expired (never recorded, past its TTL, or not the tenant\'s), invalid_label, invalid_index. Nothing is silently dropped. A 503 after the labels were sent means their outcome is unknown: sending the same feedback again is safe, a label is counted at most once.',
      tag: 'feedback',
      guard: 'feedback',
      body: ref('FeedbackRequest'),
      answers: { '200': ok('the result of each item', ref('FeedbackResponse'), RATE_LIMIT) },
      problems: BODY_PROBLEMS,
    },
  },
  '/v2/models/{model}/infer': { post: inferOperation('infer', 'Infer (Open Inference Protocol), routed by the rollout', ['Model']) },
  '/v2/models/{model}/versions/{version}/infer': { post: inferOperation('inferVersion', 'Infer on a version (Open Inference Protocol)', ['Model', 'Version']) },
  '/v2/models/{model}': { get: metadataOperation('getModelMetadata', 'Model metadata (Open Inference Protocol)', ['Model']) },
  '/v2/models/{model}/versions/{version}': { get: metadataOperation('getModelVersionMetadata', 'Metadata of a model version (Open Inference Protocol)', ['Model', 'Version']) },
  '/v2/models/{model}/ready': { get: readyOperation('getModelReady', 'Model readiness (Open Inference Protocol)', ['Model']) },
  '/v2/models/{model}/versions/{version}/ready': { get: readyOperation('getModelVersionReady', 'Readiness of a model version (Open Inference Protocol)', ['Model', 'Version']) },
  '/v2/health/live': {
    get: { operationId: 'getServerLive', summary: 'Edge liveness (Open Inference Protocol)', description: 'No key: for probes. The edge answers it itself, without calling the backend.', tag: 'inference', guard: 'none', answers: { '200': ok('the edge is live', ref('ServerLive')) }, problems: [429, 500] },
  },
  '/v2/health/ready': {
    get: {
      operationId: 'getServerReady', summary: 'Edge readiness (Open Inference Protocol)', description: 'No key: for probes. From the edge\'s own calls to the backend, without calling it: not ready while they go unanswered and no Lambda tier can take them.', tag: 'inference', guard: 'none',
      answers: { '200': ok('the edge is ready', ref('ServerReady')), '503': { description: 'the edge is not ready: its calls to the backend are going unanswered', content: { 'application/json': { schema: ref('ServerReady') }, 'application/problem+json': { schema: ref('OipProblem') } } } },
      problems: [429, 500],
    },
  },
}

const TAGS = [
  { name: 'predict', description: 'Predictions from feature values, for models with a feature spec.' },
  { name: 'catalog', description: 'The models a client may call and how to call them.' },
  { name: 'rollout', description: 'Traffic split, canary, history and drift of a model (admin scope).' },
  { name: 'inference', description: 'Open Inference Protocol (KServe V2) pass-through to the backend.' },
  { name: 'feedback', description: 'Ground-truth labels for what the edge served (feedback scope).' },
  { name: 'admin', description: 'Operator endpoints (admin scope).' },
  { name: 'meta', description: 'The edge itself.' },
]

const build = (): OpenApiDocument => {
  const paths = Object.fromEntries(
    Object.entries(operations).map(([path, methods]) => [path, Object.fromEntries(Object.entries(methods).map(([method, spec]) => [method, operation(path, spec)]))]),
  )
  return {
    openapi: '3.1.0',
    info: {
      title: 'edge-infer',
      version: '0.1.0',
      summary: 'Prediction API for ONNX models at the edge.',
      description: 'A Hono worker at the edge (auth, rate limits, input normalization, validation, feature enrichment, rollout routing) in front of an onnxruntime-node inference tier with dynamic batching. Every failure is an RFC 9457 problem (`application/problem+json`); on /v2 paths it also carries the Open Inference Protocol `error` member.',
      // The package is private and ships no license: no rights are granted (an SPDX LicenseRef, as SPDX has no id for that).
      license: { name: 'Proprietary: no license is granted', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      { url: 'https://edge-infer.example.workers.dev', description: 'production (placeholder: the workers.dev or custom domain of the deployment)' },
      { url: 'http://127.0.0.1:8787', description: 'local: `npm start`' },
    ],
    tags: TAGS,
    security: SECURITY,
    paths,
    components: {
      schemas: { ...componentsOf(requestSchemas, 'input'), ...componentsOf(responseSchemas, 'output') },
      // Filled in while the operations were built: only the problem responses some operation names.
      responses,
      parameters,
      headers,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key> (npm run keys:create)' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'the same API key in X-Api-Key' },
      },
    },
  }
}

let built: OpenApiDocument | undefined

/** The document, built on first use and shared after: the worker serves the same object to every request. */
export const openApiDocument = (): OpenApiDocument => (built ??= build())
