import type { AuthVariables } from './pipeline/auth/index.ts'
import type { BodyVariables } from './pipeline/body/index.ts'
import type { EnrichVariables } from './pipeline/enrich/index.ts'
import type { ForwardVariables } from './pipeline/forward/index.ts'
import type { IsolateVariables } from './pipeline/isolate/index.ts'
import type { ModelVariables } from './pipeline/model/index.ts'
import type { NormalizeVariables } from './pipeline/normalize/index.ts'
import type { RequestIdVariables } from './pipeline/request-id/index.ts'
import type { RouteVariables } from './pipeline/route/index.ts'
import type { TraceVariables } from './pipeline/trace/index.ts'
import type { ValidateVariables } from './pipeline/validate/index.ts'

/**
 * The edge worker's one environment definition: Cloudflare bindings (vars and secrets from
 * wrangler.toml) and the per-request variables the stages hand to each other.
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
  /** Secret: the backend's `INFER_TOKEN`, sent on every call to it; unset sends none. */
  INFER_TOKEN?: string
  /** Upstash Redis REST endpoint and token (secrets); unset uses the in-isolate defaults. */
  UPSTASH_REDIS_REST_URL?: string
  UPSTASH_REDIS_REST_TOKEN?: string
  /** Time budget for a feature-store read before defaults are used (default 25 ms). */
  FEATURE_TIMEOUT_MS?: string
  /** Time budget for each other Redis call: rollout state, keys, history, request and normalization counts (default 200 ms). */
  REDIS_TIMEOUT_MS?: string
  /** Longest time request counts wait in an isolate before they are flushed to Redis (default 1000 ms). */
  METRICS_FLUSH_MS?: string
  /** Longest wait of a `/metrics` scrape for the backend's figures (weights, quality); past it they are left out (default 3000 ms). */
  METRICS_SCRAPE_TIMEOUT_MS?: string
  /** Models whose served predictions are kept for feedback, comma-separated, or `*` for every model; unset keeps none. */
  FEEDBACK_MODELS?: string
  /** Seconds a served prediction waits for its label (default 2592000, 30 days). */
  FEEDBACK_TTL_SECONDS?: string
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
  CONTROLLER_MIN_LABELS?: string
  CONTROLLER_QUALITY_METRIC?: string
  CONTROLLER_QUALITY_MARGIN?: string
  /**
   * OpenTelemetry export of the edge's spans (edge/telemetry/), by the spec's names: the OTLP/HTTP
   * collector's base URL (`/v1/traces` is appended) or its traces URL as is; unset, nothing is traced.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT?: string
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string
  /** Secret: `key=value,...` headers sent with each export (a collector's auth, e.g. Grafana Cloud or Honeycomb). */
  OTEL_EXPORTER_OTLP_HEADERS?: string
  /** Milliseconds an export may take before it is abandoned (default 10000). */
  OTEL_EXPORTER_OTLP_TIMEOUT?: string
  /** `service.name` of the edge's spans (default edge-infer-edge). */
  OTEL_SERVICE_NAME?: string
  /** Sampler and its argument: always_on, always_off, traceidratio, or parentbased_ any of them (default parentbased_always_on). */
  OTEL_TRACES_SAMPLER?: string
  OTEL_TRACES_SAMPLER_ARG?: string
}

/**
 * Every context variable of the app: what each stage declares it sets, in request order. Stages
 * see only their own and those they read (`StageEnv`); route handlers outside the predict
 * pipeline, `onError` and the request log see all of them.
 */
export type Variables = IsolateVariables &
  RequestIdVariables &
  TraceVariables &
  BodyVariables &
  AuthVariables &
  ModelVariables &
  NormalizeVariables &
  ValidateVariables &
  EnrichVariables &
  RouteVariables &
  ForwardVariables

export interface AppEnv {
  Bindings: Bindings
  Variables: Variables
}
