import { Hono } from 'hono'
import { secureHeaders } from 'hono/secure-headers'
import type { Bindings } from './bindings.ts'
import { type Isolate, type IsolateParts, createIsolate, isolateCache } from './isolate.ts'
import { backendStatsRoutes } from './console/backend-stats.ts'
import { consoleRoutes } from './console/routes.ts'
import { type ErrorEnv, notFound, onError } from './on-error.ts'
import { openApiDocument } from './openapi.ts'
import { auth } from './pipeline/auth/index.ts'
import { requireJson } from './pipeline/body/index.ts'
import { discardUnreadBody } from './pipeline/body/discard.ts'
import { cors } from './pipeline/cors/index.ts'
import { enrich } from './pipeline/enrich/index.ts'
import { forward } from './pipeline/forward/index.ts'
import { isolate } from './pipeline/isolate/index.ts'
import { model, predictModel } from './pipeline/model/index.ts'
import { normalize } from './pipeline/normalize/index.ts'
import { rateLimit } from './pipeline/rate-limit/index.ts'
import { requestId } from './pipeline/request-id/index.ts'
import { requestLog } from './pipeline/request-log/index.ts'
import { metricsEndpoint } from './pipeline/request-metrics/endpoint.ts'
import { requestMetrics } from './pipeline/request-metrics/index.ts'
import { respond } from './pipeline/respond/index.ts'
import { route } from './pipeline/route/index.ts'
import { Pipeline, mount } from './pipeline/pipeline.ts'
import type { Stage } from './pipeline/stage.ts'
import type { AuthVariables } from './pipeline/auth/index.ts'
import type { BodyVariables } from './pipeline/body/index.ts'
import type { EnrichVariables } from './pipeline/enrich/index.ts'
import type { ForwardVariables } from './pipeline/forward/index.ts'
import type { IsolateVariables } from './pipeline/isolate/index.ts'
import type { ModelVariables } from './pipeline/model/index.ts'
import type { NormalizeVariables } from './pipeline/normalize/index.ts'
import type { RequestIdVariables } from './pipeline/request-id/index.ts'
import type { RouteVariables } from './pipeline/route/index.ts'
import type { StageEnv } from './pipeline/stage.ts'
import type { TraceVariables } from './pipeline/trace/index.ts'
import type { ValidateVariables } from './pipeline/validate/index.ts'
import { traceContext } from './pipeline/trace/index.ts'
import { validate } from './pipeline/validate/index.ts'
import { driftRoutes } from './rollout/drift-routes.ts'
import { feedbackRoutes } from './quality/feedback-routes.ts'
import { qualityRoutes } from './quality/quality-routes.ts'
import { rolloutRoutes } from './rollout/routes.ts'
import { catalogRoutes } from './routes/catalog.ts'
import { infer } from './routes/infer.ts'
import { allowedMethods, methodNotAllowed } from './routes/method-not-allowed.ts'
import { MODEL_READ_PATHS, oipRoutes } from './routes/oip.ts'

/**
 * Every context variable a request may carry, as the stages declare them: the app is where they
 * meet (tests and tools that drive stages outside the app use this).
 */
export type AppVariables = IsolateVariables<Isolate> &
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
export type AppEnv = StageEnv<AppVariables>

export interface EdgeAppOptions {
  /** The isolate for a request's bindings; by default one per configuration, built by `createIsolate` with `parts`. */
  isolateFor?: (env: Bindings | undefined) => Isolate
  /** Parts used instead of those the bindings would build (tests, benchmarks). */
  parts?: IsolateParts
  /** Where the per-request log line goes (the Workers console by default). */
  log?: (line: string) => void
}

/**
 * The secure headers that matter for a JSON API (OWASP REST Security Cheat Sheet): HSTS, nosniff,
 * no framing, no referrer, same-origin resource policy. The document-only ones hono/secure-headers
 * also sends by default (COOP, Origin-Agent-Cluster, X-DNS-Prefetch-Control, X-Download-Options,
 * X-Permitted-Cross-Domain-Policies, X-XSS-Protection) protect nothing on a JSON response and
 * each costs a header write per response.
 */
const apiSecureHeaders = (): Stage<object> =>
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
 * The edge worker's route table. Every request passes the unread-body drop (on its way out) →
 * isolate → request id → trace context → request log → request metrics → CORS → secure headers;
 * each route then adds its stages, and predict runs the whole pipeline of DESIGN's request path:
 * auth → rate limit → body checks → model → normalize → validate → enrich → route → forward →
 * respond. A route is found and the key checked before a body is read: a POST to a path without
 * one is 404 or 405, not 415, and a caller without a key costs no body read (the drop reads
 * without keeping or parsing).
 * Every failure leaves through `onError`.
 */
export const createApp = ({ parts, isolateFor = isolateCache((env) => createIsolate(env, parts)), log }: EdgeAppOptions = {}) => {
  const everyRequest = Pipeline.begin()
    .then(discardUnreadBody())
    .then(isolate({ isolateFor }))
    .then(requestId())
    .then(traceContext())
    .then(requestLog(log ? { write: log } : {}))
    .then(requestMetrics())
    .then(cors({
      // The methods the API has; If-Match and ETag so that a page on an allowed origin can PUT a rollout.
      allowMethods: ['GET', 'HEAD', 'POST', 'PUT'],
      allowHeaders: ['authorization', 'x-api-key', 'content-type', 'if-match', 'x-model-version', 'x-experiment-key', 'x-request-deadline-ms', 'x-request-id', 'traceparent'],
      exposeHeaders: ['etag', 'x-request-id', 'x-trace-id', 'x-model-version', 'x-variant', 'x-input-normalized', 'x-features-degraded', 'x-served-by', 'x-canary-fallback', 'server-timing', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'],
      maxAge: 600,
    }))
    .then(apiSecureHeaders())
  const callers = everyRequest.then(auth({ scope: 'predict' }), 'auth').then(rateLimit(), 'rate_limit')
  const admins = everyRequest.then(auth({ scope: 'admin' }), 'auth').then(rateLimit(), 'rate_limit')
  const labellers = everyRequest.then(auth({ scope: 'feedback' }), 'auth').then(rateLimit(), 'rate_limit')
  const tensors = callers.then(requireJson()).then(model(), 'model').then(route(), 'route')
  const predictions = callers
    .then(requireJson())
    .then(predictModel(), 'model')
    .then(normalize(), 'normalize')
    .then(validate(), 'validate')
    .then(enrich(), 'enrich')
    .then(route(), 'route')
    .then(forward(), 'forward')

  // Handlers read what their stages declare; the app itself only what the error mapper reads.
  const app = new Hono<ErrorEnv>()
  app.use('*', ...everyRequest.all())
  app.get('/healthz', (c) => c.json({ ok: true, request_id: c.get('requestId') }))
  // Serialized once: the document is the same for every request.
  const document = JSON.stringify(openApiDocument())
  app.get('/openapi.json', (c) => c.body(document, 200, { 'content-type': 'application/json' }))
  mount(app, 'GET', '/metrics', admins.answer(everyRequest, metricsEndpoint()))
  app.use('/v1/models/:model/rollout/*', ...admins.since(everyRequest))
  app.use('/v1/models/:model/versions/:version/drift', ...admins.since(everyRequest))
  app.use('/v1/backend/stats', ...admins.since(everyRequest))
  app.use('/v1/models/:model/quality', ...admins.since(everyRequest))
  app.route('/', driftRoutes())
  app.route('/', qualityRoutes())
  app.use('/v1/feedback', ...labellers.since(everyRequest))
  // The body is checked on the routes that take one, once routing and the key have let the request in.
  mount(app, 'POST', '/v1/feedback', labellers.then(requireJson()).since(labellers))
  app.route('/', feedbackRoutes())
  mount(app, 'PUT', '/v1/models/:model/rollout', admins.then(requireJson()).since(admins))
  app.route('/', rolloutRoutes())
  app.route('/', backendStatsRoutes())
  // The operator console's page needs no key; it asks for an admin key and calls the routes above.
  app.route('/', consoleRoutes())
  mount(app, 'GET', '/v1/models', callers.since(everyRequest))
  mount(app, 'GET', '/v1/models/:model', callers.since(everyRequest))
  app.route('/', catalogRoutes())
  for (const path of ['/v2/models/:model/infer', '/v2/models/:model/versions/:version/infer']) {
    mount(app, 'POST', path, tensors.answer(everyRequest, infer(), 'forward'))
  }
  for (const path of MODEL_READ_PATHS) mount(app, 'GET', path, callers.since(everyRequest))
  // Health is for probes: no key, as on the backend.
  app.route('/', oipRoutes())
  mount(app, 'POST', '/v1/models/:model/predict', predictions.answer(everyRequest, respond()))
  // Last, so that only a method the path lacks gets here.
  for (const [path, allow] of allowedMethods(app.routes)) app.all(path, methodNotAllowed({ allow }))
  app.notFound(notFound)
  app.onError(onError)
  return app
}
