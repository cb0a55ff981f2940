import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from './env.ts'
import { InferenceError } from './errors.ts'
import { errorFields } from './logger.ts'
import { driftRoutes } from './routes/drift.ts'
import { healthRoutes } from './routes/health.ts'
import { inferRoutes } from './routes/infer.ts'
import { metricsRoutes } from './routes/metrics.ts'
import { observeRoutes } from './routes/observe.ts'
import { inferAuth } from './middleware/bearer-auth.ts'
import { modelRoutes } from './routes/models.ts'
import { repositoryRoutes } from './routes/repository.ts'

/** What the log calls a request its client abandoned (nginx's 499): not a 4xx it was sent, not a 5xx. */
const CLIENT_CLOSED_REQUEST = 499

/**
 * The inference server's HTTP surface: the Open Inference Protocol REST API, its repository
 * extension, statistics and Prometheus metrics. Every failure leaves as `{"error": "..."}`.
 */
export const createApp = (deps: BackendDeps) => {
  const { logger } = deps
  const app = new Hono<BackendEnv>()
  // Probes stay open for the orchestrator; the repository API has its own token. Without a token
  // nothing is guarded, and no request passes through the guard.
  const token = deps.settings.INFER_TOKEN
  if (token !== undefined) app.use('/v2/*', inferAuth({ token, open: (path) => path.startsWith('/v2/health/') || path.startsWith('/v2/repository/') }))
  app.route('/', healthRoutes(deps))
  // With a metrics port for Prometheus, /metrics here is the edge's (backend stats): behind its token.
  if (token !== undefined && deps.settings.METRICS_PORT !== undefined) app.use('/metrics', inferAuth({ token, open: () => false }))
  app.route('/', metricsRoutes(deps))
  app.route('/', inferRoutes(deps))
  app.route('/', observeRoutes(deps))
  app.route('/', modelRoutes(deps))
  app.route('/', driftRoutes(deps))
  app.route('/', repositoryRoutes(deps))
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404))
  app.onError((err, c) => {
    if (err instanceof InferenceError) {
      if (err.status >= 500) logger.warn('request failed', { path: c.req.path, status: err.status, error: err.message })
      return c.json({ error: err.message }, err.status, err.headers)
    }
    // A client that hangs up mid-body is not a server fault: no error line, no 5xx (nobody reads the answer).
    if (c.req.raw.signal.aborted) {
      logger.info('client closed the request', { path: c.req.path, status: CLIENT_CLOSED_REQUEST, error: err.message })
      return c.json({ error: 'client closed the request' }, 400)
    }
    logger.error('unhandled error', { path: c.req.path, ...errorFields(err) })
    return c.json({ error: 'internal server error' }, 500)
  })
  return app
}
