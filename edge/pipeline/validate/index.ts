import type { MiddlewareHandler } from 'hono'
import type { AppEnv } from '../../env.ts'
import { Problem } from '../../problem.ts'
import { type SchemaCache, schemaCache } from './compile-spec.ts'
import { type ModelOf, type SpecFor, modelFrom, modelParam } from '../normalize/index.ts'

export interface ValidateOptions {
  specFor: SpecFor
  /** Most instances per request (default 64). */
  maxInstances?: number
  /** Most field errors listed in one problem body (default 50); the detail still counts them all. */
  maxErrors?: number
  modelOf?: ModelOf
  /** Compiled validators (default: the isolate's shared `schemaCache`). */
  cache?: SchemaCache
  /**
   * Cache key for the spec, e.g. `${model}@${version}`, for a `specFor` that returns a new object
   * per call; then a spec is recompiled at most once per TTL. Default: cache by spec identity.
   */
  cacheKey?: (model: string) => string | undefined
}

/**
 * Validates the normalized body (`normalize` must run first) against the zod schema compiled from
 * the model's feature spec and hands on `predict`; otherwise 400 with every error (up to
 * `maxErrors`) as `{ path, message }`.
 */
export const validate = ({ specFor, maxInstances = 64, maxErrors = 50, modelOf = modelParam, cache = schemaCache, cacheKey }: ValidateOptions): MiddlewareHandler<AppEnv> =>
  async function validate(c, next) {
    const model = modelFrom(c, modelOf, 'validate')
    const body = c.get('body')
    if (body === undefined) throw new Error('validate() runs after normalize(): no body was set')
    const validator = cache.get(await specFor(c, model), { maxInstances, key: cacheKey?.(model) })
    const result = validator.validate(body)
    if (!result.success) {
      const n = result.errors.length
      const shown = result.errors.slice(0, maxErrors)
      throw new Problem(
        400,
        'Bad Request',
        `the request does not match the feature spec of ${model}: ${n} error${n > 1 ? 's' : ''}${n > shown.length ? ` (the first ${shown.length} are listed)` : ''}`,
        { slug: 'invalid-input', errors: shown },
      )
    }
    c.set('predict', result.data)
    await next()
  }
