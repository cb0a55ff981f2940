import { Hono, type Context } from 'hono'
import type { AppEnv } from '../env.ts'
import { requestDeadline } from '../pipeline/forward/deadline.ts'

/** The model routes, which the app guards as it guards infer. */
export const MODEL_READ_PATHS = ['/v2/models/:model', '/v2/models/:model/versions/:version', '/v2/models/:model/ready', '/v2/models/:model/versions/:version/ready'] as const

/** The backend path of a model route, from its own (decoded) parameters; the backend judges them. */
const modelPath = (model: string, version: string | undefined, suffix: string): string =>
  `/v2/models/${encodeURIComponent(model)}${version === undefined ? '' : `/versions/${encodeURIComponent(version)}`}${suffix}`

/**
 * Open Inference Protocol metadata, readiness and health, passed on as the backend answers them:
 * `GET /v2/models/{m}[/versions/{v}][/ready]` (mount behind auth) and `GET /v2/health/{live,ready}`.
 */
export const oipRoutes = () => {
  const app = new Hono<AppEnv>()
  const pass = (c: Context<AppEnv>, path: string) =>
    c.get('isolate').reader.read(path, c.get('requestId'), requestDeadline(c)).then(({ status, body }) => c.json(body, status))
  for (const path of ['/v2/health/live', '/v2/health/ready']) app.get(path, (c) => pass(c, path))
  for (const path of MODEL_READ_PATHS) {
    const suffix = path.endsWith('/ready') ? '/ready' : ''
    app.get(path, (c) => pass(c, modelPath(c.req.param('model') ?? '', c.req.param('version'), suffix)))
  }
  return app
}
