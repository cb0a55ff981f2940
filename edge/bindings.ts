import * as z from 'zod'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS } from '../shared/upstash-client.ts'

/**
 * The edge worker's bindings (vars and secrets from wrangler.toml), each with its meaning, default
 * and bounds: the one place they are defined. Every binding is text; `Bindings` is the schema's
 * input and the parsed settings its output.
 */

/** A var as given: unset and blank are the same. */
const text = (description: string) => z.string().optional().describe(description)

/**
 * A tuning number: unset, blank or not a positive (whole, if `whole`) number keeps the default,
 * so a typo in a limit never stops the edge from serving.
 */
const positive = (fallback: number, description: string, { whole = false } = {}) =>
  z
    .string()
    .optional()
    .transform((raw) => {
      const n = Number(raw?.trim() || NaN)
      return Number.isFinite(n) && n > 0 && (!whole || Number.isSafeInteger(n)) ? n : fallback
    })
    .describe(description)
    .meta({ default: String(fallback) })

/** A share in [0, 1]; unset, blank or outside keeps the default. */
const share = (fallback: number, description: string) =>
  z
    .string()
    .optional()
    .transform((raw) => {
      const n = Number(raw?.trim() || NaN)
      return Number.isFinite(n) && n >= 0 && n <= 1 ? n : fallback
    })
    .describe(description)
    .meta({ default: String(fallback) })

/** The items of a comma-separated var, blanks dropped. */
const items = (raw: string | undefined): string[] => (raw ?? '').split(',').map((item) => item.trim()).filter(Boolean)

/** A comma-separated list. */
const list = (description: string) => z.string().optional().transform(items).describe(description)

/** The serving settings: parsed once per configuration, leniently (see `positive`). */
export const servingBindings = z.object({
  BACKEND_URL: text('Base URL of the inference backend, e.g. http://127.0.0.1:8000; unset, every inference call is a 503 saying so.'),
  ALLOWED_ORIGINS: list('Comma-separated origins allowed by CORS; empty allows none.'),
  MAX_BODY_BYTES: positive(256 * 1024, 'Request body limit in bytes (413 past it).', { whole: true }),
  MAX_INSTANCES: positive(64, 'Most instances one predict request may carry.', { whole: true }),
  FEATURE_TIMEOUT_MS: positive(25, 'Feature-store budget per read; past it, defaults and `X-Features-Degraded: 1`.'),
  REDIS_TIMEOUT_MS: positive(DEFAULT_EDGE_REDIS_TIMEOUT_MS, 'Budget of every other Redis call on the request path: rollout state, API keys issued into Redis, rollout history, normalization counts. Past it: the last known rollout (or the default routing; one warning per spell, one line when Redis answers again), a key found in the isolate cache from there, else 503 with `Retry-After: 1` (never 401); the history and `/metrics` answer 503 with `Retry-After: 1`; a normalization count is given up (it runs after the response); a controller tick\'s write fails that model for this tick.'),
  METRICS_FLUSH_MS: positive(1_000, 'Longest time an isolate holds request counts before adding them into Redis (with Upstash configured).'),
  // Under Prometheus's default 10 s scrape timeout, with room for the edge's own Redis reads.
  REQUEST_LOG_SAMPLE_RATE: share(0.01, "Share of plain successes (2xx, nothing normalized or degraded) that get the per-request log line; every other request always gets one. Workers Logs already records each invocation's status and duration, and a line per request costs the worker CPU on every predict; 1 logs every request."),
  METRICS_SCRAPE_TIMEOUT_MS: positive(3_000, "Longest a `/metrics` scrape waits for the backend's figures (weights, quality); past it they are left out, the edge's own counts are always served."),
  FEEDBACK_MODELS: z
    .string()
    .optional()
    .transform((raw): ReadonlySet<string> | 'all' => (raw?.trim() === '*' ? 'all' : new Set(items(raw))))
    .describe("Override of the models' own opt-in: models whose served predictions are kept for feedback, comma-separated, or `*` for every model, besides those whose config.json has a `feedback` block (which opts a model in, with its own `ttl_seconds` and `labels`); unset: only those. A named model's block, when it has one, still gives its TTL and labels."),
  FEEDBACK_TTL_SECONDS: positive(30 * 24 * 3_600, 'Seconds a served prediction waits for its label (30 days), for a model whose config.json `feedback` block names no `ttl_seconds`.', { whole: true }),
  PREDICTION_CACHE_MAX_ENTRIES: positive(10_000, 'Most rows one isolate keeps in the edge prediction cache (least recently used dropped first); only models whose rollout has a `cache` block use it.', { whole: true }),
  PREDICTION_CACHE_MAX_ENTRY_BYTES: positive(4_096, 'Largest cached answer of one row, in bytes; a larger one is served but not cached.', { whole: true }),
  OTEL_EXPORTER_OTLP_ENDPOINT: text("OpenTelemetry collector's base URL (OTLP/HTTP; `/v1/traces` is appended); unset with the next one unset, nothing is traced."),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: text("The collector's traces URL, used as is."),
  OTEL_EXPORTER_OTLP_TIMEOUT: positive(10_000, 'Milliseconds a span export may take before it is abandoned (the spec’s default).'),
  OTEL_SERVICE_NAME: z
    .string()
    .optional()
    .transform((raw) => raw?.trim() || 'edge-infer-edge')
    .describe('`service.name` of the edge’s spans.')
    .meta({ default: 'edge-infer-edge' }),
  OTEL_TRACES_SAMPLER: text('always_on, always_off, traceidratio, or parentbased_ any of them (default parentbased_always_on).'),
  OTEL_TRACES_SAMPLER_ARG: text('The traceidratio sampler’s ratio in [0, 1] (default 1).'),
  ALERT_WEBHOOK_URL: text('Where each rollout controller decision is POSTed as JSON (4 attempts with backoff, in `waitUntil`, never blocking the tick); unset posts nothing.'),
  LAMBDA_FUNCTION: text('The CPU fallback tier: when the backend answers 503/429 or its circuit is open, the same call goes to the backend\'s Lambda handler (`X-Served-By: lambda`). Needs `LAMBDA_REGION` and the AWS credentials; unset disables the fallback.'),
  LAMBDA_REGION: text('Region of LAMBDA_FUNCTION.'),
  LAMBDA_ENDPOINT: text('Local Lambda Invoke endpoint (dev and tests); production uses the regional endpoint.'),
})

/** Secrets (`wrangler secret put`): never in wrangler.toml. */
export const secretBindings = z.object({
  API_KEYS: text('JSON array of `{name, hash, scopes, rate_limit_per_minute, tenant?}` (hashes only; `npm run keys:create` makes one); a key limited by a `[[ratelimits]]` binding has `rate_limit: "RATE_LIMIT_…"` (the binding\'s name) instead of `rate_limit_per_minute`.'),
  INFER_TOKEN: text("The backend's `INFER_TOKEN`, sent as `Authorization: Bearer` on every call to it; required in staging and production (their backend is a public Tunnel hostname). A backend that refuses it answers the client 502 `backend-refused` (no retry cures it)."),
  UPSTASH_REDIS_REST_URL: text('Upstash Redis REST endpoint (with the token): entity features, shared rate limits (a sliding log in Lua), rollout state, issued keys, counts and served records; unset, embedded demo features (`edge/stores/features/demo-seed.json`) and per-isolate state.'),
  UPSTASH_REDIS_REST_TOKEN: text('Upstash Redis REST token.'),
  AWS_ACCESS_KEY_ID: text('Credentials for the Lambda client (Workers have no ambient AWS identity).'),
  AWS_SECRET_ACCESS_KEY: text('Secret of AWS_ACCESS_KEY_ID.'),
  OTEL_EXPORTER_OTLP_HEADERS: text("`key=value,...` headers sent with each span export (a collector's auth)."),
})

/** The longest window the backend's drift reports cover (it keeps 180 minutes of counts, and refuses longer windows). */
export const BACKEND_MAX_WINDOW_MINUTES = 180

/** Realized-quality figures the controller can compare; log loss is the one where lower is better. */
export const QUALITY_METRICS = ['accuracy', 'roc_auc', 'log_loss'] as const

/** A var's number, or the default when unset or blank; anything else is an error naming the var. */
const threshold = <T extends z.ZodType<number, number>>(schema: T, fallback: number, description: string) =>
  z
    .string()
    .optional()
    .transform((raw) => (raw?.trim() ? Number(raw.trim()) : fallback))
    .pipe(schema)
    .describe(description)
    .meta({ default: String(fallback) })

const DEFAULT_STEPS = [1, 5, 20, 50, 100]

/**
 * The rollout controller's thresholds, parsed strictly when it runs: a controller must not move
 * traffic on thresholds nobody chose.
 */
export const controllerBindings = z
  .object({
    CONTROLLER_STEPS: z
      .string()
      .optional()
      .transform((raw) => (raw?.trim() ? raw.split(',').map((s) => Number(s.trim())) : DEFAULT_STEPS))
      .pipe(
        z
          .array(z.number().gt(0).max(100))
          .min(1)
          .refine((s) => s.every((w, i) => i === 0 || w > s[i - 1]), 'steps must increase')
          .refine((s) => s[s.length - 1] === 100, 'the last step must be 100 (promotion)'),
      )
      .describe('Canary weights in order, comma-separated, as a percentage of the traffic the canary and its baseline hold together (other arms keep theirs). Reaching 100 is the promotion.')
      .meta({ default: DEFAULT_STEPS.join(',') }),
    CONTROLLER_DWELL_MINUTES: threshold(z.number().min(0), 10, 'Minutes at a weight before the next step.'),
    CONTROLLER_MIN_ROWS: threshold(z.number().int().min(1), 1_000, 'Rows each arm needs in a window before its prediction histograms are compared, or a step is taken.'),
    CONTROLLER_MIN_REQUESTS: threshold(z.number().int().min(1), 200, 'Canary requests needed before its error rate can roll it back (NaN outputs need none).'),
    CONTROLLER_ERROR_RATE_MARGIN: threshold(z.number().min(0).max(1), 0.02, "How far (absolute, 0.02 = 2 points) the canary's error rate may exceed the stable arm's."),
    CONTROLLER_PSI_WARNING: threshold(z.number().positive(), 0.1, 'Prediction-histogram PSI, canary against stable, that holds the canary.'),
    CONTROLLER_PSI_CRITICAL: threshold(z.number().positive(), 0.2, 'PSI that counts towards rollback; at least CONTROLLER_PSI_WARNING.'),
    CONTROLLER_CRITICAL_WINDOWS: threshold(z.number().int().min(1), 3, 'Critical windows, with no clean one between, that roll the canary back.'),
    CONTROLLER_CLEAN_WINDOWS: threshold(z.number().int().min(1), 3, 'Consecutive clean windows a step needs besides the dwell time.'),
    CONTROLLER_P95_RATIO: threshold(z.number().min(1), 1.5, 'Canary p95 above stable p95 × ratio + slack is a latency breach (a hold).'),
    CONTROLLER_P95_SLACK_MS: threshold(z.number().min(0), 5, 'The slack of that comparison, in milliseconds.'),
    CONTROLLER_MAX_WINDOW_MINUTES: threshold(
      z.number().int().min(1).max(BACKEND_MAX_WINDOW_MINUTES, `the backend reports windows of at most ${BACKEND_MAX_WINDOW_MINUTES} minutes`),
      60,
      `Longest window read: the window is the time since the step started, clamped to [1, this] minutes; at most ${BACKEND_MAX_WINDOW_MINUTES}.`,
    ),
    CONTROLLER_MIN_LABELS: threshold(z.number().int().min(1), 200, 'Labelled rows (feedback) each arm needs in a window before realized quality can roll the canary back.'),
    // Labels come when the outcome is known (a payment made, a claim settled), often long after the
    // prediction; a step taken before they do would judge the canary on nothing it could be wrong about.
    CONTROLLER_LABEL_MAX_DELAY_MINUTES: threshold(
      z.number().min(0),
      60,
      "For a model with feedback on: how long past the dwell a step or promotion waits for CONTROLLER_MIN_LABELS labels of the predictions served in the step (counted by serving time, however late they arrive); past it the step is taken on the other rules. 0 does not wait.",
    ),
    CONTROLLER_QUALITY_METRIC: z
      .string()
      .optional()
      .transform((raw) => raw?.trim() || 'accuracy')
      .pipe(z.enum(QUALITY_METRICS))
      .describe(`The realized-quality figure compared, canary against stable: ${QUALITY_METRICS.join(', ')}.`)
      .meta({ default: 'accuracy' }),
    CONTROLLER_QUALITY_MARGIN: threshold(z.number().min(0), 0.05, "How much worse (absolute: 0.05 = 5 points of accuracy or AUC, 0.05 nats of log loss) the canary's realized figure may be."),
  })
  .refine((c) => c.CONTROLLER_PSI_CRITICAL >= c.CONTROLLER_PSI_WARNING, { path: ['CONTROLLER_PSI_CRITICAL'], message: 'must be at least the warning threshold' })

/**
 * A Cloudflare Rate Limiting binding (`[[ratelimits]]` in wrangler.toml): `limit` counts one call
 * against `key` in this Cloudflare location and answers whether it is within the binding's own
 * `simple = { limit, period }`, which the worker cannot read.
 */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>
}

/** `[[ratelimits]]` bindings a key's `rate_limit` may name: their names start with this. */
export const RATE_LIMIT_BINDING_PREFIX = 'RATE_LIMIT_'
export type RateLimitBindingName = `${typeof RATE_LIMIT_BINDING_PREFIX}${string}`

/** Every binding the edge reads as text; `[[ratelimits]]` bindings are objects, found by name (edge/stores/limits/binding.ts). */
export type Bindings = z.input<typeof servingBindings> & z.input<typeof secretBindings> & z.input<typeof controllerBindings>
export type ServingSettings = z.output<typeof servingBindings>

/** The numbers and lists the serving bindings configure, parsed once per configuration. */
export interface EdgeSettings {
  maxBodyBytes: number
  maxInstances: number
  allowedOrigins: readonly string[]
  /** Budget of a feature-store read before defaults are used. */
  featureTimeoutMs: number
  /** Budget of every other Redis call. */
  redisTimeoutMs: number
  /** Models whose served predictions are recorded for feedback (`FEEDBACK_MODELS`; `*` for all). */
  feedbackModels: ReadonlySet<string> | 'all'
  /** How long a served prediction waits for its label. */
  feedbackTtlSeconds: number
  /** Longest wait of a `/metrics` scrape for what the backend must say (weights, quality). */
  metricsScrapeMs: number
  /** The edge prediction cache's bounds per isolate: rows, and bytes of one row's answer. */
  predictionCache: { maxEntries: number; maxEntryBytes: number }
  /** Share of plain successes that get the per-request log line. */
  requestLogSampleRate: number
}

/** Each setting from its binding, or its default when the binding is unset or unusable. */
export const settingsFrom = (env: Partial<Bindings>): EdgeSettings => {
  const parsed = servingBindings.parse(env)
  return {
    maxBodyBytes: parsed.MAX_BODY_BYTES,
    maxInstances: parsed.MAX_INSTANCES,
    allowedOrigins: parsed.ALLOWED_ORIGINS,
    featureTimeoutMs: parsed.FEATURE_TIMEOUT_MS,
    redisTimeoutMs: parsed.REDIS_TIMEOUT_MS,
    feedbackModels: parsed.FEEDBACK_MODELS,
    feedbackTtlSeconds: parsed.FEEDBACK_TTL_SECONDS,
    metricsScrapeMs: parsed.METRICS_SCRAPE_TIMEOUT_MS,
    predictionCache: { maxEntries: parsed.PREDICTION_CACHE_MAX_ENTRIES, maxEntryBytes: parsed.PREDICTION_CACHE_MAX_ENTRY_BYTES },
    requestLogSampleRate: parsed.REQUEST_LOG_SAMPLE_RATE,
  }
}
