import { Redis } from '@upstash/redis'
import { type Bindings, type EdgeSettings, servingBindings, settingsFrom } from './bindings.ts'
import { Problem } from './problem.ts'
import { KeyConfigError, type KeyStore } from './stores/keys/key-store.ts'
import { keyStoreFrom } from './stores/keys/chained.ts'
import { UpstashKeyStore } from './stores/keys/upstash.ts'
import { CachedFeatureStore, type FeatureReader } from './stores/features/cached.ts'
import type { FeatureStore } from './stores/features/feature-store.ts'
import { DEFAULT_FEATURE_SEED, type FeatureSeed, MemoryFeatureStore } from './stores/features/memory.ts'
import { UpstashFeatureStore } from './stores/features/upstash.ts'
import { FallbackTransport } from './backend-client/fallback.ts'
import { HttpTransport } from './backend-client/http.ts'
import { LambdaTransport } from './backend-client/lambda.ts'
import type { ProtocolReader, Transport } from './backend-client/transport.ts'
import { ModelCatalog } from './backend-client/catalog.ts'
import { RequestMetrics } from './stores/tallies/tally.ts'
import { UpstashTally } from './stores/tallies/upstash.ts'
import type { RateLimiter } from './stores/limits/limiter.ts'
import { SlidingWindowLimiter } from './stores/limits/memory.ts'
import { UpstashRateLimiter } from './stores/limits/upstash.ts'
import { BindingRateLimiters } from './stores/limits/binding.ts'
import { Reroutes } from './pipeline/route/reroutes.ts'
import { type SchemaCache, createSchemaCache } from './pipeline/validate/compile-spec.ts'
import { BackendMonitor } from './rollout/backend-monitor.ts'
import { countedHistory } from './stores/history/counted.ts'
import { MemoryHistoryStore } from './stores/history/memory.ts'
import { type HistoryReader } from './stores/history/history-store.ts'
import type { MonitorSource } from './rollout/monitor-source.ts'
import { withEdgeCounts } from './rollout/edge-counted-source.ts'
import { feedbackOn } from './quality/feedback-opt-in.ts'
import { MemoryRolloutStore } from './stores/rollouts/memory.ts'
import { type RolloutStore } from './stores/rollouts/rollout-store.ts'
import { UpstashHistoryStore } from './stores/history/upstash.ts'
import { CachedRolloutStore } from './stores/rollouts/cached.ts'
import { UpstashRolloutStore } from './stores/rollouts/upstash.ts'
import { type TelemetryLoader, telemetryFrom } from './telemetry/index.ts'
import { type GroundTruthStore } from './stores/ground-truth/ground-truth-store.ts'
import { MemoryGroundTruth } from './stores/ground-truth/memory.ts'
import { UpstashGroundTruth } from './stores/ground-truth/upstash.ts'
import { CachedRowsObserver } from './pipeline/cache/observe.ts'

/** Everything that lives as long as an isolate and its configuration: what the pipeline talks to. */
export interface Isolate {
  settings: EdgeSettings
  /** Inference: the HTTP backend, behind the Lambda fallback when one is configured. */
  transport: Transport
  /** Open Inference Protocol reads (metadata, readiness, health): the HTTP backend only. */
  reader: ProtocolReader
  catalog: ModelCatalog
  rollouts: RolloutStore
  /** Rollout decisions and changes, recorded and counted in `requestMetrics` by `rollouts` with each change. */
  history: HistoryReader
  /** Where the rollout controller reads each arm's window (the backend's drift reports, with the edge's own counts added); none without a backend. */
  monitor?: MonitorSource
  /** The backend's drift reports, for the admin drift route. */
  drift?: BackendMonitor
  /** Redis when configured (shared by every isolate), else this isolate's own. */
  limiter: RateLimiter
  /** The `[[ratelimits]]` bindings, for keys whose `rate_limit` names one. */
  rateLimitBindings: BindingRateLimiters
  /** The `API_KEYS` secret, then keys issued into Redis when it is configured. */
  keys: KeyStore
  features: FeatureReader
  /** Request, normalization and rollout-decision counts: summed in Redis when configured, else this isolate's. */
  requestMetrics: RequestMetrics
  /** Served predictions awaiting labels, and the realized-quality and edge-failure counts: in Redis when configured. */
  groundTruth: GroundTruthStore
  /** Requests routed off arms whose version is not served. */
  reroutes: Reroutes
  /** Validators compiled from feature specs. */
  validators: SchemaCache
  /** Span export, when an OTLP endpoint is bound; none means the edge traces nothing. */
  telemetry?: TelemetryLoader
  /** Where rows answered from the edge prediction cache are reported for drift counting: the HTTP backend. */
  cacheObserver?: CachedRowsObserver
}

/** Parts a caller provides instead of building them from the bindings (tests, benchmarks). */
export type IsolateParts = Partial<Omit<Isolate, 'settings'>> & { featureSeed?: FeatureSeed }

/** A transport or reader for an edge without `BACKEND_URL`: every use is a 503 saying so. */
const unconfigured = (): never => {
  throw new Problem(503, 'Service Unavailable', 'this edge has no inference tier configured', { slug: 'backend-unconfigured' })
}
const noBackend: Transport & ProtocolReader = { name: 'none', infer: async () => unconfigured(), metadata: async () => unconfigured(), models: async () => unconfigured(), read: async () => unconfigured(), health: () => ({ ready: false }) }

/**
 * The Lambda CPU tier, when `LAMBDA_FUNCTION` is set. Region and explicit credentials are then
 * required (a Worker has no ambient AWS config); `LAMBDA_ENDPOINT` is for local endpoints.
 */
export const lambdaTransportFrom = (env: Bindings): LambdaTransport | undefined => {
  if (!env.LAMBDA_FUNCTION) return undefined
  const missing = (['LAMBDA_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const).filter((name) => !env[name])
  if (missing.length > 0) throw new Error(`LAMBDA_FUNCTION is set but ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not configured`)
  return new LambdaTransport({
    functionName: env.LAMBDA_FUNCTION,
    region: env.LAMBDA_REGION!,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
    ...(env.LAMBDA_ENDPOINT ? { endpoint: env.LAMBDA_ENDPOINT } : {}),
  })
}

/** Redis for state every isolate shares, when Upstash is configured; none means isolate-local defaults. */
const sharedRedis = (env: Bindings): Redis | undefined =>
  env.UPSTASH_REDIS_REST_URL && env.UPSTASH_REDIS_REST_TOKEN
    ? new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, retry: false, enableTelemetry: false })
    : undefined

const misconfigured: KeyStore = {
  find: async () => {
    throw new Problem(503, 'Service Unavailable', 'authentication is not configured correctly on this edge; the operator has been told', { slug: 'auth-misconfigured' })
  },
}

/**
 * Keys from the secret and Redis, parsed at the first authenticated request (an edge serving only
 * probes needs none). An unusable `API_KEYS` is logged once (without its content) and every
 * authenticated request gets a 503 until it is fixed, instead of failing obscurely.
 */
const keysFrom = (env: Bindings, shared: KeyStore | undefined): KeyStore => {
  let store: KeyStore | undefined
  const built = (): KeyStore => {
    try {
      return keyStoreFrom(env.API_KEYS, shared)
    } catch (err) {
      if (!(err instanceof KeyConfigError)) throw err
      console.error(JSON.stringify({ level: 'error', msg: 'API key configuration is invalid; every authenticated request gets 503', error: err.message }))
      return misconfigured
    }
  }
  return { find: (hash) => (store ??= built()).find(hash) }
}

/** The composition root: one isolate's parts, from its bindings, with `parts` taking the place of any built one. */
export const createIsolate = (env: Bindings, { featureSeed = DEFAULT_FEATURE_SEED, ...parts }: IsolateParts = {}): Isolate => {
  const settings = settingsFrom(env)
  const http = env.BACKEND_URL ? new HttpTransport({ baseUrl: env.BACKEND_URL, token: env.INFER_TOKEN }) : undefined
  const lambda = parts.transport ? undefined : lambdaTransportFrom(env)
  // With a fallback, each answer says which tier served it (parameters.served_by).
  const transport = parts.transport ?? (http && lambda ? new FallbackTransport(http, lambda) : (http ?? noBackend))
  const redis = sharedRedis(env)
  const bounded = { timeoutMs: settings.redisTimeoutMs }
  const store: FeatureStore = redis
    ? new UpstashFeatureStore({ url: env.UPSTASH_REDIS_REST_URL!, token: env.UPSTASH_REDIS_REST_TOKEN! })
    : new MemoryFeatureStore(featureSeed)
  const requestMetrics = parts.requestMetrics ?? new RequestMetrics(redis ? { shared: new UpstashTally(redis, bounded), flushEveryMs: servingBindings.shape.METRICS_FLUSH_MS.parse(env.METRICS_FLUSH_MS) } : {})
  // Drift and health are counted by the HTTP tier; the Lambda fallback serves but does not monitor.
  const drift = parts.drift ?? (env.BACKEND_URL ? new BackendMonitor({ baseUrl: env.BACKEND_URL, token: env.INFER_TOKEN }) : undefined)
  const catalog = parts.catalog ?? new ModelCatalog({ transport })
  const cacheObserver = parts.cacheObserver ?? (env.BACKEND_URL ? new CachedRowsObserver({ baseUrl: env.BACKEND_URL, token: env.INFER_TOKEN }) : undefined)
  const groundTruth = parts.groundTruth ?? (redis ? new UpstashGroundTruth(redis, bounded) : new MemoryGroundTruth())
  // Without Redis, the rollout store appends each change's entry here, counted as it is.
  const ownHistory = countedHistory(new MemoryHistoryStore(), requestMetrics)
  const backendSource = parts.monitor ?? drift
  // The backend counts what reached it; the edge adds what never did and the labels feedback brought.
  const monitor = backendSource && withEdgeCounts(backendSource, groundTruth, {
    threshold: async (model) => (await catalog.describe(model, `controller-${model}`)).postprocess?.threshold,
    collectsLabels: async (model) => feedbackOn(settings, await catalog.describe(model, `controller-${model}`)),
  })
  return {
    settings,
    transport,
    reader: parts.reader ?? http ?? noBackend,
    catalog,
    rollouts: parts.rollouts ?? (redis ? new CachedRolloutStore(new UpstashRolloutStore(redis, bounded)) : new MemoryRolloutStore({ history: ownHistory })),
    history: parts.history ?? (redis ? new UpstashHistoryStore(redis, bounded) : ownHistory),
    ...(drift ? { drift } : {}),
    ...(monitor ? { monitor } : {}),
    limiter: parts.limiter ?? (redis ? new UpstashRateLimiter({ redis }) : new SlidingWindowLimiter()),
    rateLimitBindings: parts.rateLimitBindings ?? new BindingRateLimiters(env),
    keys: parts.keys ?? keysFrom(env, redis ? new UpstashKeyStore(redis, bounded) : undefined),
    features: parts.features ?? new CachedFeatureStore(store, { timeoutMs: settings.featureTimeoutMs }),
    requestMetrics,
    groundTruth,
    reroutes: parts.reroutes ?? new Reroutes(),
    validators: parts.validators ?? createSchemaCache(),
    telemetry: parts.telemetry ?? telemetryFrom(env),
    ...(cacheObserver ? { cacheObserver } : {}),
  }
}

/** Every string binding, in one order: a change to any of them is a new configuration. */
const configurationKey = (env: Partial<Bindings>): string =>
  JSON.stringify(Object.entries(env).filter(([, value]) => typeof value === 'string').sort(([a], [b]) => (a < b ? -1 : 1)))

/**
 * One isolate per configuration. Workers hand the bindings to each request and each scheduled
 * event, but caches, breakers, limiters and isolate-local state must live as long as the isolate:
 * the worker's requests and its cron tick share what this returns.
 */
export const isolateCache = (build: (env: Bindings) => Isolate = createIsolate) => {
  let cached: { env: Bindings; key: string; isolate: Isolate } | undefined
  return function isolateFor(env: Bindings | undefined): Isolate {
    const bindings = env ?? ({} as Bindings)
    // Mostly the very same env object, request after request.
    if (cached?.env === bindings) return cached.isolate
    const key = configurationKey(bindings)
    if (cached?.key !== key) cached = { env: bindings, key, isolate: build(bindings) }
    else cached.env = bindings
    return cached.isolate
  }
}
