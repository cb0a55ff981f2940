import { Hono, type Context } from 'hono'
import type { AppEnv } from '../env.ts'
import { HttpTransport } from '../pipeline/forward/http-transport.ts'
import type { ProtocolReader } from '../pipeline/forward/transport.ts'
import { Problem } from '../problem.ts'

export interface OipRoutesOptions {
  /** Where the reads go; by default the HTTP backend at `BACKEND_URL`, one reader per isolate. */
  reader?: (c: Context<AppEnv>) => ProtocolReader
}

/**
 * The isolate's reader of `BACKEND_URL`, made again only when the binding changes. It is not the
 * services' transport, which may be the Lambda fallback: that tier serves inference only.
 */
export const backendReader = () => {
  let cached: { url: string; reader: ProtocolReader } | undefined
  return function backendReader(c: Context<AppEnv>): ProtocolReader {
    const url = c.env?.BACKEND_URL
    if (!url) throw new Problem(503, 'Service Unavailable', 'this edge has no inference tier configured', { slug: 'backend-unconfigured' })
    if (cached?.url !== url) cached = { url, reader: new HttpTransport({ baseUrl: url }) }
    return cached.reader
  }
}

/** The model routes, which the app guards as it guards infer. */
export const MODEL_READ_PATHS = ['/v2/models/:model', '/v2/models/:model/versions/:version', '/v2/models/:model/ready', '/v2/models/:model/versions/:version/ready'] as const

/** The backend path of a model route, from its own (decoded) parameters; the backend judges them. */
const modelPath = (model: string, version: string | undefined, suffix: string): string =>
  `/v2/models/${encodeURIComponent(model)}${version === undefined ? '' : `/versions/${encodeURIComponent(version)}`}${suffix}`

/**
 * Open Inference Protocol metadata, readiness and health, passed on as the backend answers them:
 * `GET /v2/models/{m}[/versions/{v}][/ready]` (mount behind auth) and `GET /v2/health/{live,ready}`.
 */
export const oipRoutes = ({ reader = backendReader() }: OipRoutesOptions = {}) => {
  const app = new Hono<AppEnv>()
  const pass = (c: Context<AppEnv>, path: string) =>
    reader(c).read(path, c.get('requestId')).then(({ status, body }) => c.json(body, status))
  for (const path of ['/v2/health/live', '/v2/health/ready']) app.get(path, (c) => pass(c, path))
  for (const path of MODEL_READ_PATHS) {
    const suffix = path.endsWith('/ready') ? '/ready' : ''
    app.get(path, (c) => pass(c, modelPath(c.req.param('model') ?? '', c.req.param('version'), suffix)))
  }
  return app
}
