import { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS } from '../shared/upstash-client.ts'
import type { Context } from 'hono'
import type { KeyStore } from './pipeline/auth/key-store.ts'
import { UpstashKeyStore } from './pipeline/auth/upstash-key-store.ts'
import { MemoryNormalizationMetrics, type NormalizationMetrics, UpstashNormalizationMetrics } from './pipeline/normalize/metrics.ts'
import { ModelCatalog } from './pipeline/model/catalog.ts'
import { MemoryHistoryStore, type HistoryStore } from './rollout/history-store.ts'
import { BackendMonitor } from './rollout/backend-monitor.ts'
import type { MonitorSource } from './rollout/monitor-source.ts'
import { UpstashHistoryStore } from './rollout/upstash-history-store.ts'
import type { AppEnv, Bindings } from './env.ts'
import { FallbackTransport } from './pipeline/forward/fallback-transport.ts'
import { HttpTransport } from './pipeline/forward/http-transport.ts'
import { LambdaTransport } from './pipeline/forward/lambda-transport.ts'
import type { Transport } from './pipeline/forward/transport.ts'
import { UpstashRateLimiter } from './pipeline/rate-limit/upstash-limiter.ts'
import type { RateLimiter } from './pipeline/rate-limit/sliding-window.ts'
import { MemoryRolloutStore, type RolloutStore } from './rollout/store.ts'
import type { Reroutes } from './pipeline/route/reroutes.ts'
import { CachedRolloutStore, UpstashRolloutStore } from './rollout/upstash-store.ts'

/** What the pipeline talks to, built once per isolate from the worker's bindings. */
export interface EdgeServices {
  transport: Transport
  catalog: ModelCatalog
  rollouts: RolloutStore
  /** Rate limits shared by every isolate (Redis); absent, each isolate limits on its own. */
  limiter?: RateLimiter
  /** Rollout decisions and changes; services built without one get an isolate-local store on first use. */
  history?: HistoryStore
  /** The backend's drift reports: the admin drift route's, and each arm's window for the rollout controller. */
  monitor?: BackendMonitor
  /** Where the controller reads arm windows instead of `monitor` (tests); with neither, the scheduled handler skips its tick. */
  monitorSource?: MonitorSource
  /** Input fixes per API key: shared through Redis when configured. */
  normalization?: NormalizationMetrics
  /** API keys issued into Redis (`keys:create --redis`), looked up after the `API_KEYS` secret. */
  keys?: KeyStore
  /** Requests routed off arms whose version is not served; isolate-local, made on first use. */
  reroutes?: Reroutes
}

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

/** `REDIS_TIMEOUT_MS` as a positive number of milliseconds, else the default. */
export const redisTimeoutMs = (env: Partial<Bindings>): number => {
  const n = Number(env.REDIS_TIMEOUT_MS?.trim() || NaN)
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_EDGE_REDIS_TIMEOUT_MS
}

export const createServices = (env: Bindings): EdgeServices => {
  if (!env.BACKEND_URL) throw new Error('BACKEND_URL is not configured')
  const http = new HttpTransport({ baseUrl: env.BACKEND_URL })
  const lambda = lambdaTransportFrom(env)
  // With a fallback, each answer says which tier served it (parameters.served_by).
  const transport: Transport = lambda ? new FallbackTransport(http, lambda) : http
  const redis = sharedRedis(env)
  const bounded = { timeoutMs: redisTimeoutMs(env) }
  return {
    transport,
    catalog: new ModelCatalog({ transport }),
    // Drift and health are counted by the HTTP tier; the Lambda fallback serves but does not monitor.
    monitor: new BackendMonitor({ baseUrl: env.BACKEND_URL }),
    rollouts: redis ? new CachedRolloutStore(new UpstashRolloutStore(redis, bounded)) : new MemoryRolloutStore(),
    history: redis ? new UpstashHistoryStore(redis, undefined, bounded) : new MemoryHistoryStore(),
    ...(redis ? { limiter: new UpstashRateLimiter({ redis }), keys: new UpstashKeyStore(redis, bounded) } : {}),
    normalization: redis ? new UpstashNormalizationMetrics(redis, bounded) : new MemoryNormalizationMetrics(),
  }
}

/** The bindings the services are built from: a change to any of them builds new services. */
const configurationKey = (env: Bindings | undefined): string =>
  JSON.stringify([env?.BACKEND_URL, env?.UPSTASH_REDIS_REST_URL, env?.UPSTASH_REDIS_REST_TOKEN, env?.REDIS_TIMEOUT_MS, env?.LAMBDA_FUNCTION, env?.LAMBDA_REGION, env?.LAMBDA_ENDPOINT, env?.AWS_ACCESS_KEY_ID, env?.AWS_SECRET_ACCESS_KEY])

/**
 * One set of services per isolate and configuration: bindings arrive with each request (and each
 * scheduled event) in Workers, but the services (caches, breaker, limiter, isolate-local state)
 * must live as long as the isolate. The worker builds one of these for its app and its scheduled
 * handler, so both see the same rollout state and history.
 */
export const isolateServices = (build: (env: Bindings) => EdgeServices = createServices) => {
  let cached: { env: Bindings; key: string; services: EdgeServices } | undefined
  return (env: Bindings): EdgeServices => {
    // Asked several times per request, mostly with the very same env object.
    if (cached !== undefined && cached.env === env) return cached.services
    const key = configurationKey(env)
    if (cached?.key !== key) cached = { env, key, services: build(env) }
    else cached.env = env
    return cached.services
  }
}

/** The same, looked up from a request's context. */
export const servicesResolver = (build: (env: Bindings) => EdgeServices = createServices) => {
  const forEnv = isolateServices(build)
  return (c: Context<AppEnv>): EdgeServices => forEnv(c.env ?? ({} as Bindings))
}
