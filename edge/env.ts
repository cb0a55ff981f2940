import type { Context as OtelContext } from '@opentelemetry/api'
import type { FeatureValue } from '../shared/feature-spec.ts'
import type { ModelDescription } from './pipeline/model/catalog.ts'
import type { Assignment } from './rollout/rollout.ts'

/**
 * The edge worker's one environment definition: Cloudflare bindings (vars and secrets from
 * wrangler.toml) and the per-request variables middlewares hand to each other.
 */
export interface Bindings {
  /** Base URL of the inference backend, e.g. http://127.0.0.1:8000. */
  BACKEND_URL: string
  /** Comma-separated origins allowed by CORS; empty allows none. */
  ALLOWED_ORIGINS?: string
  /** Request body limit in bytes (default 262144). */
  MAX_BODY_BYTES?: string
  /** Most instances one predict request may carry (default 64). */
  MAX_INSTANCES?: string
  /** Secret: JSON array of API key entries (hashes only). */
  API_KEYS?: string
  /** Upstash Redis REST endpoint and token (secrets); unset uses the in-isolate defaults. */
  UPSTASH_REDIS_REST_URL?: string
  UPSTASH_REDIS_REST_TOKEN?: string
  /** Time budget for a feature-store read before defaults are used (default 25 ms). */
  FEATURE_TIMEOUT_MS?: string
  /** Time budget for each other Redis call: rollout state, keys, history, normalization counts (default 200 ms). */
  REDIS_TIMEOUT_MS?: string
  /** Lambda CPU tier used when the backend is saturated or down; unset disables the fallback. */
  LAMBDA_FUNCTION?: string
  LAMBDA_REGION?: string
  /** Local Lambda Invoke endpoint (dev and tests); production uses the regional endpoint. */
  LAMBDA_ENDPOINT?: string
  /** Secrets: explicit credentials for the Lambda client (Workers have no ambient AWS identity). */
  AWS_ACCESS_KEY_ID?: string
  AWS_SECRET_ACCESS_KEY?: string
  /** Where each rollout controller decision is POSTed as JSON; unset posts nothing. */
  ALERT_WEBHOOK_URL?: string
  /** Rollout controller thresholds (edge/rollout/controller-config.ts has the meaning and default of each). */
  CONTROLLER_STEPS?: string
  CONTROLLER_DWELL_MINUTES?: string
  CONTROLLER_MIN_ROWS?: string
  CONTROLLER_MIN_REQUESTS?: string
  CONTROLLER_ERROR_RATE_MARGIN?: string
  CONTROLLER_PSI_WARNING?: string
  CONTROLLER_PSI_CRITICAL?: string
  CONTROLLER_CRITICAL_WINDOWS?: string
  CONTROLLER_CLEAN_WINDOWS?: string
  CONTROLLER_P95_RATIO?: string
  CONTROLLER_P95_SLACK_MS?: string
  CONTROLLER_MAX_WINDOW_MINUTES?: string
}

/** An authenticated caller, as the auth middleware resolved it (never the key itself). */
export interface Caller {
  name: string
  scopes: string[]
  /** Requests per minute this key may make. */
  rateLimitPerMinute: number
}

/** A predict request after normalization and validation against the model's feature spec. */
export interface PredictInput {
  instances: Array<Record<string, FeatureValue>>
  /** Entity ids for feature enrichment, e.g. `{ user_id: "u-42" }`. */
  entity?: Record<string, string>
}

export interface Variables {
  requestId: string
  /** When the first stage saw the request (epoch ms): deadlines and Server-Timing count from here. */
  receivedAt: number
  /** The traceparent the edge sends onward: the caller's trace id, the edge's span id. */
  traceparent: string
  /** OpenTelemetry context of the request span; stage spans are its children. */
  otelContext: OtelContext
  /** Set when entity features came from defaults because the store was slow or down. */
  featuresDegraded: boolean
  caller: Caller
  /** The request body as `requireJson` read it (within the size limit); parse it with `jsonBody`. */
  bodyText: string
  /** The parsed JSON body, after normalization. */
  body: unknown
  /** How many input fixes normalization applied (surfaced as `X-Input-Normalized`). */
  normalizedFixes: number
  predict: PredictInput
  /** The model named in the path, as the backend describes it. */
  model: ModelDescription
  /** Which version and variant serve this request, and why. */
  assignment: Assignment
}

export interface AppEnv {
  Bindings: Bindings
  Variables: Variables
}
