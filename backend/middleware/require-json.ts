import type { MiddlewareHandler } from 'hono'
import { InferenceError, badRequest } from '../errors.ts'
import type { BackendEnv } from '../env.ts'

export interface RequireJsonOptions {
  /** Accept an empty body (as `undefined`), for endpoints whose body is optional. */
  optional?: boolean
}

const isJson = (type: string) => /^application\/json\s*(;|$)/i.test(type.trim())

/** Parses a JSON body into `c.var.body`; refuses other media types (415) and malformed JSON (400). */
export const requireJson = ({ optional = false }: RequireJsonOptions = {}): MiddlewareHandler<BackendEnv> =>
  async function requireJson(c, next) {
    const encoding = c.req.header('content-encoding')?.trim().toLowerCase()
    if (encoding && encoding !== 'identity') {
      throw new InferenceError(415, `unsupported Content-Encoding "${encoding}"; send uncompressed JSON`, { 'accept-encoding': 'identity' }, 'unsupported_media_type')
    }
    const text = await c.req.text()
    if (text.length === 0 && optional) {
      c.set('body', undefined)
      return next()
    }
    const type = c.req.header('content-type') ?? ''
    if (!isJson(type)) {
      throw new InferenceError(415, `expected Content-Type application/json, got ${type ? `"${type}"` : 'none'}`, {}, 'unsupported_media_type')
    }
    if (text.length === 0) throw badRequest('request body is empty; expected a JSON object')
    try {
      c.set('body', JSON.parse(text))
    } catch (err) {
      throw badRequest(`malformed JSON: ${(err as Error).message}`)
    }
    await next()
  }
