import type { Context, MiddlewareHandler } from 'hono'
import type { AppEnv } from '../env.ts'

export interface CorsOptions {
  /** The origin to allow for this request (echoed in `Access-Control-Allow-Origin`), or null. */
  origin: (origin: string, c: Context<AppEnv>) => string | null
  allowMethods?: string[]
  allowHeaders?: string[]
  exposeHeaders?: string[]
  /** How long a browser may cache a preflight answer, in seconds. */
  maxAge?: number
}

/**
 * CORS with an origin allow-list, answering preflights with 204; the headers `hono/cors` sends.
 * Unlike `hono/cors` it names its headers with `c.header()` before the handler runs instead of
 * building a response up front, so the pipeline constructs one response per request, not a
 * placeholder that every later header copies.
 */
export const cors = ({
  origin: allowOrigin,
  allowMethods = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'PATCH', 'QUERY'],
  allowHeaders = [],
  exposeHeaders = [],
  maxAge,
}: CorsOptions): MiddlewareHandler<AppEnv> => {
  const methods = allowMethods.join(',')
  const allowed = allowHeaders.length > 0 ? allowHeaders.join(',') : undefined
  const exposed = exposeHeaders.length > 0 ? exposeHeaders.join(',') : undefined
  return function cors(c, next) {
    const origin = allowOrigin(c.req.header('origin') ?? '', c)
    if (origin) c.header('access-control-allow-origin', origin)
    if (exposed) c.header('access-control-expose-headers', exposed)
    c.header('vary', 'Origin', { append: true })
    if (c.req.method !== 'OPTIONS') return next()
    if (maxAge !== undefined) c.header('access-control-max-age', String(maxAge))
    c.header('access-control-allow-methods', methods)
    const headers = allowed ?? c.req.header('access-control-request-headers')?.split(',').map((h) => h.trim()).join(',')
    if (headers) {
      c.header('access-control-allow-headers', headers)
      c.header('vary', 'Access-Control-Request-Headers', { append: true })
    }
    return Promise.resolve(c.body(null, 204))
  }
}
