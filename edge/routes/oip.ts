import { Hono, type Context } from 'hono'
import type { AppEnv } from '../env.ts'
import { requestDeadline } from '../pipeline/forward/deadline.ts'
import { FallbackTransport } from '../backend-client/fallback.ts'

/** The model routes, which the app guards as it guards infer. */
export const MODEL_READ_PATHS = ['/v2/models/:model', '/v2/models/:model/versions/:version', '/v2/models/:model/ready', '/v2/models/:model/versions/:version/ready'] as const

/** The backend path of a model route, from its own (decoded) parameters; the backend judges them. */
const modelPath = (model: string, version: string | undefined, suffix: string): string =>
  `/v2/models/${encodeURIComponent(model)}${version === undefined ? '' : `/versions/${encodeURIComponent(version)}`}${suffix}`

/**
 * Open Inference Protocol metadata and readiness of models, passed on as the backend answers
 * them: `GET /v2/models/{m}[/versions/{v}][/ready]` (mount behind auth). `GET /v2/health/{live,ready}`
 * (no key, for probes) are the edge's own: live while it answers, ready unless its calls to the
 * backend are going unanswered with no Lambda tier to fall back on. They call nothing and name
 * no backend instance.
 */
export const oipRoutes = () => {
  const app = new Hono<AppEnv>()
  const pass = (c: Context<AppEnv>, path: string) =>
    c.get('isolate').reader.read(path, c.get('requestId'), requestDeadline(c)).then(({ status, body }) => c.json(body, status))
  app.get('/v2/health/live', (c) => c.json({ live: true }))
  app.get('/v2/health/ready', (c) => {
    const { reader, transport } = c.get('isolate')
    const ready = reader.health().ready || (transport instanceof FallbackTransport && transport.fallback !== undefined)
    return c.json({ ready }, ready ? 200 : 503)
  })
  for (const path of MODEL_READ_PATHS) {
    const suffix = path.endsWith('/ready') ? '/ready' : ''
    app.get(path, (c) => pass(c, modelPath(c.req.param('model') ?? '', c.req.param('version'), suffix)))
  }
  return app
}
