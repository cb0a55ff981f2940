import * as z from 'zod'

/**
 * The document's shared pieces that are not body schemas: response headers, parameters and the
 * problem statuses. Route declarations (edge/routes/) name them; edge/openapi/document.ts writes
 * each once under `components`.
 */

const integerHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } })
const stringHeader = (description: string) => ({ description, schema: { type: 'string' } })

export const HEADERS = {
  XRequestId: stringHeader('the request id (the caller\'s X-Request-Id when valid, else generated); quote it when reporting a problem'),
  RateLimitLimit: integerHeader('requests this API key may make per window (draft-ietf-httpapi-ratelimit-headers); absent for a key limited by a [[ratelimits]] tier, which tells no limit, remaining or reset'),
  RateLimitRemaining: integerHeader('requests left in the current window'),
  RateLimitReset: integerHeader('seconds until the window has room again'),
  RetryAfter: integerHeader('seconds to wait before retrying'),
  WwwAuthenticate: stringHeader('the Bearer challenge (RFC 6750), with error="invalid_token" or "insufficient_scope" where it applies'),
  ETag: stringHeader('the rollout revision as a strong ETag, "r<revision>": send it back in If-Match'),
  XModelVersion: stringHeader('the model version that answered'),
  XVariant: stringHeader('the rollout arm the request was assigned to'),
  XServedBy: { description: 'which inference tier answered (edge: the edge prediction cache)', schema: { type: 'string', enum: ['backend', 'lambda', 'edge'] } },
  XCache: { description: 'for a model whose rollout has a cache block: HIT when every row was answered from the edge prediction cache, else MISS', schema: { type: 'string', enum: ['HIT', 'MISS'] } },
  XCanaryFallback: { description: 'present (1) when the canary arm failed and the request was answered by the stable arm instead', schema: { type: 'string', enum: ['1'] } },
  ServerTiming: stringHeader('edge;dur=<ms>, backend;dur=<ms>'),
  XInputNormalized: integerHeader('how many input values the edge repaired (whitespace, percent-encoding, numeric strings, …) before validating'),
  XFeaturesDegraded: { description: '"1" when entity features were unavailable and defaults were used', schema: { type: 'string', enum: ['1'] } },
} as const
export type HeaderName = keyof typeof HEADERS

/** Each header component's field name on the wire. */
export const HEADER_FIELDS: Record<HeaderName, string> = {
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
  XCache: 'X-Cache',
  ServerTiming: 'Server-Timing',
  XInputNormalized: 'X-Input-Normalized',
  XFeaturesDegraded: 'X-Features-Degraded',
}

export const RATE_LIMIT: readonly HeaderName[] = ['RateLimitLimit', 'RateLimitRemaining', 'RateLimitReset']

/** A path, query or header parameter: its wire name and where it goes, and the zod schema of its value. */
export interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required: boolean
  description: string
  schema: z.ZodType
}

const pathParameter = (name: string, description: string, schema: z.ZodType): Parameter => ({ name, in: 'path', required: true, description, schema })

export const PARAMETERS = {
  Model: pathParameter('model', 'the model\'s name, e.g. credit-risk', z.string()),
  Version: pathParameter('version', 'a served version', z.int().min(1)),
  ModelVersionPin: { name: 'X-Model-Version', in: 'header', required: false, description: 'pin a version instead of the rollout\'s arm (a pinnable one: GET /v1/models/{model})', schema: z.string().regex(/^[1-9][0-9]{0,8}$/) },
  ExperimentKey: { name: 'X-Experiment-Key', in: 'header', required: false, description: 'the sticky key of the arm assignment when the request names no entity', schema: z.string() },
  DeadlineMs: { name: 'X-Request-Deadline-Ms', in: 'header', required: false, description: 'how long the caller waits, in whole milliseconds (default 10000)', schema: z.int().min(1).max(60_000) },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    required: true,
    description: 'the ETag of the GET this PUT replaces, a list of them, or * for whatever revision is stored: 428 without it, 412 when it names none of the current revision',
    schema: z.string(),
  },
  ConsoleFile: pathParameter('file', 'a built file\'s name, as the console page names it', z.string()),
  HistoryLimit: { name: 'limit', in: 'query', required: false, description: 'how many entries, newest first', schema: z.int().min(1).max(500).default(100) },
  DriftWindow: { name: 'window', in: 'query', required: false, description: 'minutes (90) or a duration (15m, 2h), at most 3 h', schema: z.string().default('15m') },
  QualityWindow: { name: 'window', in: 'query', required: false, description: 'the last minutes or hours of serving (15m, 6h): labels of the predictions served in them, whenever they arrived; at most 168h', schema: z.string().regex(/^[1-9][0-9]{0,4}(m|h)$/).default('60m') },
} as const satisfies Record<string, Parameter>
export type ParameterName = keyof typeof PARAMETERS

export const PROBLEMS = {
  400: 'Bad Request: the body, a header or a parameter is invalid (field errors in `errors`)',
  401: 'Unauthorized: no API key, a malformed one, or one that is not recognized',
  403: 'Forbidden: the API key lacks the scope this operation needs',
  404: 'Not Found: no such model or version (or, for predict, a model without a feature spec)',
  409: 'Conflict: the inference tier refuses the model\'s config.json (the reason is in the detail); permanent until the model is fixed and reloaded',
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
export type ProblemStatus = keyof typeof PROBLEMS

/** Headers a problem of a status carries besides X-Request-Id. */
export const PROBLEM_HEADERS: Partial<Record<ProblemStatus, readonly HeaderName[]>> = {
  401: ['WwwAuthenticate'],
  403: ['WwwAuthenticate'],
  429: ['RetryAfter', ...RATE_LIMIT],
  503: ['RetryAfter'],
}

/** What a guarded operation can be refused with before its handler runs: auth, its key store, the limiter, the edge itself. */
export const GUARD_PROBLEMS: readonly ProblemStatus[] = [401, 403, 429, 500, 503]
/** A body the edge reads: 413/415 from the body checks come first. */
export const BODY_PROBLEMS: readonly ProblemStatus[] = [400, 413, 415]
/** What the inference tier's answer can become on the way back. */
export const TIER_PROBLEMS: readonly ProblemStatus[] = [404, 409, 502, 503, 504]
