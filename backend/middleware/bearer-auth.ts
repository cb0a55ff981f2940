import { timingSafeEqual, createHash } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { InferenceError } from '../errors.ts'
import type { BackendEnv } from '../env.ts'

const digest = (s: string) => createHash('sha256').update(s).digest()

/**
 * Whether a request's `Authorization: Bearer <token>` is `token`. Digests of equal length,
 * compared in constant time: timing tells nothing about how close a guess came.
 */
const bearerMatcher = (token: string) => {
  const expected = digest(token)
  return (authorization: string | undefined): boolean => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
    return match !== null && timingSafeEqual(digest(match[1]), expected)
  }
}

const unauthorized = (message: string, realm: string) =>
  new InferenceError(401, message, { 'www-authenticate': `Bearer realm="${realm}"` }, 'unauthorized')

export interface AdminAuthOptions {
  /** The bearer token; without one the guarded routes are disabled. */
  token: string | undefined
}

/** Guards the repository API with a bearer token. */
export const adminAuth = ({ token }: AdminAuthOptions): MiddlewareHandler<BackendEnv> => {
  const matches = token === undefined ? undefined : bearerMatcher(token)
  return async function adminAuth(c, next) {
    if (!matches) throw new InferenceError(403, 'the repository API is disabled: start the server with ADMIN_TOKEN set', {}, 'forbidden')
    if (!matches(c.req.header('authorization'))) throw unauthorized('missing or wrong admin bearer token', 'edge-infer-backend')
    await next()
  }
}

export interface InferAuthOptions {
  /** The token the edge sends; unset leaves the routes open (local development, a private network). */
  token: string | undefined
  /** Paths that stay open whatever the token: health probes, and routes with their own guard. */
  open: (path: string) => boolean
}

/**
 * With `INFER_TOKEN` set, only callers that hold it (the edge) may infer and read model metadata:
 * 401 `{"error"}` otherwise. The token never reaches a log line or an error message.
 */
export const inferAuth = ({ token, open }: InferAuthOptions): MiddlewareHandler<BackendEnv> => {
  const matches = token === undefined ? undefined : bearerMatcher(token)
  return async function inferAuth(c, next) {
    if (matches && !open(c.req.path) && !matches(c.req.header('authorization'))) {
      throw unauthorized('this inference server needs the edge\'s bearer token (INFER_TOKEN)', 'edge-infer-backend')
    }
    await next()
  }
}
