import { Hono, type Context } from 'hono'
import { secureHeaders } from 'hono/secure-headers'
import { envKeyStore } from './pipeline/auth/key-store.ts'
import type { KeyStore } from './pipeline/auth/key-store.ts'
import { predictable } from './pipeline/model/catalog.ts'
import type { AppEnv } from './env.ts'
import { featureStoreResolver } from './pipeline/enrich/resolve-store.ts'
import { auth } from './pipeline/auth/index.ts'
import { cors } from './pipeline/cors/index.ts'
import { enrich } from './pipeline/enrich/index.ts'
import { normalize } from './pipeline/normalize/index.ts'
import { rateLimit } from './pipeline/rate-limit/index.ts'
import { requestId } from './pipeline/request-id/index.ts'
import { requestLog } from './pipeline/request-log/index.ts'
import { traceContext } from './pipeline/trace/index.ts'
import { requireJson } from './pipeline/body/index.ts'
import { route } from './pipeline/route/index.ts'
import { validate } from './pipeline/validate/index.ts'
import { MemoryNormalizationMetrics, normalizationExposition } from './pipeline/normalize/metrics.ts'
import { notFound, onError } from './on-error.ts'
import { openApiDocument } from './openapi.ts'
import { stage } from './pipeline/trace/spans.ts'
import { catalogRoutes } from './routes/catalog.ts'
import { driftRoutes } from './rollout/drift-routes.ts'
import { inferHandler } from './routes/infer.ts'
import { allowedMethods, methodNotAllowed } from './routes/method-not-allowed.ts'
import { MODEL_READ_PATHS, oipRoutes } from './routes/oip.ts'
import { predictHandler } from './pipeline/forward/index.ts'
import { rolloutRoutes } from './rollout/routes.ts'
import { SlidingWindowLimiter, type RateLimiter } from './pipeline/rate-limit/sliding-window.ts'
import { servicesResolver, type EdgeServices } from './isolate.ts'
import type { Bindings } from './env.ts'

export interface EdgeAppOptions {
  /** Body limit when the `MAX_BODY_BYTES` binding is unset or not a positive whole number. */
  maxBodyBytes?: number
  /** Builds the isolate's services from its bindings (tests inject their own). */
  services?: (env: Bindings) => EdgeServices
  /** Where API keys are looked up; the `API_KEYS` secret, then Redis when configured, by default. */
  keys?: KeyStore | ((c: Context<AppEnv>) => KeyStore)
  limiter?: RateLimiter
  /** Where the per-request log line goes (the Workers console by default). */
  log?: (line: string) => void
}

/** ALLOWED_ORIGINS as a list, parsed once per distinct value (it arrives with every request). */
const originAllowList = () => {
  let parsed: { from: string; origins: readonly string[] } = { from: '', origins: [] }
  return (c: Context<AppEnv>): readonly string[] => {
    const from = c.env?.ALLOWED_ORIGINS ?? ''
    if (parsed.from !== from) parsed = { from, origins: from.split(',').map((o) => o.trim()).filter(Boolean) }
    return parsed.origins
  }
}

/**
 * The secure headers that matter for a JSON API (OWASP REST Security Cheat Sheet): HSTS, nosniff,
 * no framing, no referrer, same-origin resource policy. The document-only ones hono/secure-headers
 * also sends by default (COOP, Origin-Agent-Cluster, X-DNS-Prefetch-Control, X-Download-Options,
 * X-Permitted-Cross-Domain-Policies, X-XSS-Protection) protect nothing on a JSON response and
 * each costs a header write per response.
 */
const apiSecureHeaders = () =>
  secureHeaders({
    xFrameOptions: 'DENY',
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  })

/**
 * The edge worker's HTTP surface. The predict pipeline runs in the order of DESIGN's request
 * path: request id → trace context → CORS → secure headers → body checks → auth → rate limit → normalize →
 * validate → enrich → route → forward → respond; every failure leaves through `onError`.
 */
export const createApp = ({ maxBodyBytes = 256 * 1024, services: build, keys: keysOption, limiter: limiterOption, log }: EdgeAppOptions = {}) => {
  const services = servicesResolver(build)
  const keys = keysOption ?? envKeyStore({ shared: (c) => services(c).keys })
  // Without Redis, one limiter per isolate: createApp runs once per isolate in the worker.
  const limiter = limiterOption ?? new SlidingWindowLimiter()
  const specFor = async (c: Context<AppEnv>, model: string) => predictable(await services(c).catalog.describe(model, c.get('requestId'))).spec
  const maxInstances = (c: Context<AppEnv>) => Number(c.env?.MAX_INSTANCES ?? 64) || 64
  const bodyLimit = (c: Context<AppEnv>) => {
    const bytes = Number(c.env?.MAX_BODY_BYTES)
    return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : maxBodyBytes
  }
  // MAX_INSTANCES is a binding, known per request: one validate middleware per distinct value.
  const validators = new Map<number, ReturnType<typeof validate>>()
  const validatorFor = (max: number) => {
    let middleware = validators.get(max)
    if (!middleware) validators.set(max, (middleware = validate({ specFor, maxInstances: max })))
    return middleware
  }

  const allowedOrigins = originAllowList()
  const app = new Hono<AppEnv>()
  app.use(
    '*',
    requestId(),
    traceContext(),
    requestLog(log ? { write: log } : {}),
    cors({
      origin: (origin, c) => (allowedOrigins(c).includes(origin) ? origin : null),
      // The methods the API has; If-Match and ETag so that a page on an allowed origin can PUT a rollout.
      allowMethods: ['GET', 'HEAD', 'POST', 'PUT'],
      allowHeaders: ['authorization', 'x-api-key', 'content-type', 'if-match', 'x-model-version', 'x-experiment-key', 'x-request-deadline-ms', 'x-request-id', 'traceparent'],
      exposeHeaders: ['etag', 'x-request-id', 'x-trace-id', 'x-model-version', 'x-variant', 'x-input-normalized', 'x-features-degraded', 'x-served-by', 'server-timing', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'],
      maxAge: 600,
    }),
    apiSecureHeaders(),
    requireJson({ maxBytes: bodyLimit }),
  )
  const callers = stage('auth', auth({ store: keys, scope: 'predict' }))
  const admins = stage('auth', auth({ store: keys, scope: 'admin' }))
  const limited = stage('rate_limit', rateLimit({ limiter: (c) => services(c).limiter ?? limiter }))
  const routed = stage('route', route({ services }))
  // Entity features: Upstash when configured, else the embedded demo store; one per isolate.
  const features = featureStoreResolver()
  const transport = (c: Context<AppEnv>) => services(c).transport
  // Services built without counters (tests, benchmarks) get isolate-local ones, kept on the services object.
  const normalizationOf = (c: Context<AppEnv>) => (services(c).normalization ??= new MemoryNormalizationMetrics())

  app.get('/healthz', (c) => c.json({ ok: true, request_id: c.get('requestId') }))
  const document = openApiDocument()
  app.get('/openapi.json', (c) => c.json(document))
  app.get('/metrics', admins, limited, async (c) =>
    c.body(normalizationExposition(await normalizationOf(c).totals()), 200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }),
  )
  app.use('/v1/models/:model/rollout/*', admins, limited)
  app.use('/v1/models/:model/versions/:version/drift', admins, limited)
  app.route('/', driftRoutes({ monitor: (c) => services(c).monitor }))
  app.route('/', rolloutRoutes({ services }))
  app.get('/v1/models', callers, limited)
  app.get('/v1/models/:model', callers, limited)
  app.route('/', catalogRoutes({ services }))
  for (const path of ['/v2/models/:model/infer', '/v2/models/:model/versions/:version/infer']) {
    app.post(path, callers, limited, routed, stage('forward', inferHandler({ transport })))
  }
  for (const path of MODEL_READ_PATHS) app.get(path, callers, limited)
  // Health is for probes: no key, as on the backend.
  app.route('/', oipRoutes())
  app.post(
    '/v1/models/:model/predict',
    callers,
    limited,
    stage('normalize', normalize({ specFor, metrics: normalizationOf })),
    stage('validate', async function validateInstances(c, next) {
      return validatorFor(maxInstances(c))(c, next)
    }),
    stage('enrich', enrich({ store: features, specFor })),
    routed,
    stage('forward', predictHandler({ transport })),
  )
  // Last, so that only a method the path lacks gets here.
  for (const [path, allow] of allowedMethods(app.routes)) app.all(path, methodNotAllowed({ allow }))
  app.notFound(notFound)
  app.onError(onError)
  return app
}
