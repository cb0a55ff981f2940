import type { Context } from 'hono'
import type { Stage, StageEnv } from '../stage.ts'
import type { EdgeSettings } from '../../bindings.ts'

type CorsNeeds = { isolate: { settings: Pick<EdgeSettings, 'allowedOrigins'> } }

export interface CorsOptions {
  allowMethods?: string[]
  allowHeaders?: string[]
  exposeHeaders?: string[]
  /** How long a browser may cache a preflight answer, in seconds. */
  maxAge?: number
}

/**
 * CORS for the origins of the isolate's `ALLOWED_ORIGINS`, answering preflights with 204; the headers `hono/cors` sends.
 * Unlike `hono/cors` it never builds a response up front: a placeholder that every later header
 * write copied. Like every stage of the pipeline, it names its headers on the final response
 * after the handler (problem responses included).
 */
export const cors = ({
  allowMethods = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'PATCH', 'QUERY'],
  allowHeaders = [],
  exposeHeaders = [],
  maxAge,
}: CorsOptions = {}): Stage<CorsNeeds> => {
  const methods = allowMethods.join(',')
  const allowed = allowHeaders.length > 0 ? allowHeaders.join(',') : undefined
  const exposed = exposeHeaders.length > 0 ? exposeHeaders.join(',') : undefined
  const preflight = (c: Context<StageEnv<CorsNeeds>>, origin: string | null): Response => {
    if (origin) c.header('access-control-allow-origin', origin)
    if (exposed) c.header('access-control-expose-headers', exposed)
    c.header('vary', 'Origin', { append: true })
    if (maxAge !== undefined) c.header('access-control-max-age', String(maxAge))
    c.header('access-control-allow-methods', methods)
    const headers = allowed ?? c.req.header('access-control-request-headers')?.split(',').map((h) => h.trim()).join(',')
    if (headers) {
      c.header('access-control-allow-headers', headers)
      c.header('vary', 'Access-Control-Request-Headers', { append: true })
    }
    return c.body(null, 204)
  }
  return async function cors(c, next) {
    const requested = c.req.header('origin')
    const origin = requested !== undefined && c.get('isolate').settings.allowedOrigins.includes(requested) ? requested : null
    if (c.req.method === 'OPTIONS') return preflight(c, origin)
    await next()
    const headers = c.res.headers
    if (origin) headers.set('access-control-allow-origin', origin)
    if (exposed) headers.set('access-control-expose-headers', exposed)
    headers.append('vary', 'Origin')
  }
}
