import { Hono } from 'hono'
import { secureHeaders } from 'hono/secure-headers'
import type { Bindings } from './bindings.ts'
import { type Isolate, type IsolateParts, createIsolate, isolateCache } from './isolate.ts'
import { type ErrorEnv, notFound, onError } from './on-error.ts'
import { auth } from './pipeline/auth/index.ts'
import { requireJson } from './pipeline/body/index.ts'
import { discardUnreadBody } from './pipeline/body/discard.ts'
import { cors } from './pipeline/cors/index.ts'
import { isolate } from './pipeline/isolate/index.ts'
import { rateLimit } from './pipeline/rate-limit/index.ts'
import { requestId } from './pipeline/request-id/index.ts'
import { requestLog } from './pipeline/request-log/index.ts'
import { requestMetrics } from './pipeline/request-metrics/index.ts'
import { Pipeline, mount } from './pipeline/pipeline.ts'
import type { Stage } from './pipeline/stage.ts'
import type { AuthVariables } from './pipeline/auth/index.ts'
import type { BodyVariables } from './pipeline/body/index.ts'
import type { CacheVariables } from './pipeline/cache/index.ts'
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
import { edgeRoutes } from './routes/index.ts'
import { allowedMethods, methodNotAllowed } from './routes/method-not-allowed.ts'
import type { Guard, Route } from './routes/route.ts'

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
  CacheVariables &
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

const METHODS = { get: 'GET', post: 'POST', put: 'PUT' } as const

type HaveOf<P> = P extends Pipeline<infer Have> ? Have : never
type GuardPipelines = Record<Guard, { plain: unknown; bodied: unknown }>
/** The routes whose guard (and body check) does not set what their handlers read; none when every route is in order. */
type Unmet<R, Guards extends GuardPipelines> = R extends { guard: infer G extends Guard; body?: infer B; needs?: infer Needs }
  ? HaveOf<Guards[G][[Exclude<B, undefined>] extends [never] ? 'plain' : 'bodied']> extends Needs ? never : R
  : never

/**
 * The edge worker: every route of edge/routes/ (each declared there once, with its guard, body,
 * schemas and handler) mounted behind its guard's pipeline. Every request passes the unread-body drop (on its way out) →
 * isolate → request id → trace context → request log → request metrics → CORS → secure headers;
 * each route then adds its stages, and predict runs the whole pipeline of DESIGN's request path:
 * auth → rate limit → body checks → model → normalize → validate → enrich → route → cache → forward →
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
      allowHeaders: ['authorization', 'x-api-key', 'content-type', 'if-match', 'x-model-version', 'x-experiment-key', 'x-request-deadline-ms', 'x-request-id', 'traceparent', 'cache-control'],
      exposeHeaders: ['etag', 'x-request-id', 'x-trace-id', 'x-model-version', 'x-variant', 'x-input-normalized', 'x-features-degraded', 'x-served-by', 'x-canary-fallback', 'x-cache', 'server-timing', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'],
      maxAge: 600,
    }))
    .then(apiSecureHeaders())
  const callers = everyRequest.then(auth({ scope: 'predict' }), 'auth').then(rateLimit(), 'rate_limit')
  const admins = everyRequest.then(auth({ scope: 'admin' }), 'auth').then(rateLimit(), 'rate_limit')
  const labellers = everyRequest.then(auth({ scope: 'feedback' }), 'auth').then(rateLimit(), 'rate_limit')
  // The body is checked on the routes that take one, once routing and the key have let the request in.
  const guards = {
    none: { plain: everyRequest, bodied: everyRequest.then(requireJson()) },
    predict: { plain: callers, bodied: callers.then(requireJson()) },
    admin: { plain: admins, bodied: admins.then(requireJson()) },
    feedback: { plain: labellers, bodied: labellers.then(requireJson()) },
  }
  const routes = edgeRoutes()
  // Each route's guard must set what its handlers read: a type error here names the routes whose does not.
  const inOrder: [Unmet<(typeof routes)[number], typeof guards>] extends [never] ? true : Unmet<(typeof routes)[number], typeof guards> = true
  void inOrder

  // Handlers read what their stages declare; the app itself only what the error mapper reads.
  const app = new Hono<ErrorEnv>()
  app.use('*', ...everyRequest.all())
  for (const declared of routes as ReadonlyArray<Route<never>>) {
    const guarded = guards[declared.guard][declared.body ? 'bodied' : 'plain'] as Pipeline<never>
    mount(app, METHODS[declared.method], declared.path, [...guarded.since(everyRequest), ...declared.handle(guarded)])
  }
  // Last, so that only a method the path lacks gets here.
  for (const [path, allow] of allowedMethods(app.routes)) app.all(path, methodNotAllowed({ allow }))
  app.notFound(notFound)
  app.onError(onError)
  return app
}
