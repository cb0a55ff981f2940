import { timingSafeEqual, createHash } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'
import { InferenceError } from '../errors.ts'
import type { BackendEnv } from '../env.ts'

export interface AdminAuthOptions {
  /** The bearer token; without one the guarded routes are disabled. */
  token: string | undefined
}

const digest = (s: string) => createHash('sha256').update(s).digest()

/** Guards the repository API with a bearer token, compared in constant time. */
export const adminAuth = ({ token }: AdminAuthOptions): MiddlewareHandler<BackendEnv> => {
  const expected = token === undefined ? undefined : digest(token)
  return async function adminAuth(c, next) {
    if (!expected) throw new InferenceError(403, 'the repository API is disabled: start the server with ADMIN_TOKEN set', {}, 'forbidden')
    const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')
    if (!match || !timingSafeEqual(digest(match[1]), expected)) {
      throw new InferenceError(401, 'missing or wrong admin bearer token', { 'www-authenticate': 'Bearer realm="edge-infer-backend"' }, 'unauthorized')
    }
    await next()
  }
}
