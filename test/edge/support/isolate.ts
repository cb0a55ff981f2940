import type { MiddlewareHandler } from 'hono'
import type { FeatureSpec } from '../../../shared/feature-spec.ts'
import type { AppEnv } from '../../../edge/app.ts'
import type { Bindings } from '../../../edge/bindings.ts'
import { type IsolateParts, createIsolate } from '../../../edge/isolate.ts'
import { isolate } from '../../../edge/pipeline/isolate/index.ts'
import { Problem } from '../../../edge/problem.ts'

/**
 * The isolate stage with one isolate built up front from `parts` and `env` (no backend unless
 * given), for tests that mount single stages on their own app.
 */
export const givenIsolate = (parts: IsolateParts = {}, env: Partial<Bindings> = {}) => {
  const built = createIsolate({ BACKEND_URL: '', ...env }, parts)
  return isolate({ isolateFor: () => built })
}

/**
 * Stands in for the model and auth stages of a single-stage test: the path's model from `specs`
 * (404 for any other, as the catalog answers), and a caller.
 */
export const givenModels = (specs: Record<string, FeatureSpec>): MiddlewareHandler<AppEnv> =>
  async function givenModels(c, next) {
    const name = c.req.param('model') ?? ''
    const spec = specs[name]
    if (!spec) throw new Problem(404, 'Not Found', `no model named "${name}"`)
    c.set('model', { name, versions: [1], spec, postprocess: { output: 'probabilities', labels: ['no', 'yes'] } })
    c.set('caller', { name: 'tester', tenant: 'tester', scopes: ['predict'], rateLimitPerMinute: 1_000 })
    await next()
  }
