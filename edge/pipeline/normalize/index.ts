import type { Context, MiddlewareHandler } from 'hono'
import type { FeatureSpec } from '../../../shared/feature-spec.ts'
import { inBackground } from '../../background.ts'
import { jsonBody } from '../body/json-body.ts'
import type { AppEnv } from '../../env.ts'
import type { NormalizationMetrics } from './metrics.ts'
import { normalizeBody } from './normalize.ts'

/** Resolves a model's feature spec (the real one reads backend model metadata, cached). */
export type SpecFor = (c: Context<AppEnv>, model: string) => Promise<FeatureSpec>

/** Which model a request is for; by default the `:model` route parameter. */
export type ModelOf = (c: Context<AppEnv>) => string | undefined

/** Response header carrying how many input fixes normalization applied (also when 0). */
export const INPUT_NORMALIZED_HEADER = 'x-input-normalized'

export const modelParam: ModelOf = (c) => c.req.param('model')

export const modelFrom = (c: Context<AppEnv>, modelOf: ModelOf, who: string): string => {
  const model = modelOf(c)
  // A wiring mistake, not a client one: onError answers 500 and logs it.
  if (!model) throw new Error(`${who}() needs a model: mount it on a route with :model or pass modelOf`)
  return model
}

export interface NormalizeOptions {
  specFor: SpecFor
  modelOf?: ModelOf
  /** Where fixes are counted per API key (requests without fixes are not recorded). */
  metrics?: (c: Context<AppEnv>) => NormalizationMetrics
}

/**
 * Parses the JSON body (malformed → 400 with line, column and position), applies the repairs of
 * `normalizeBody` against the model's feature spec, and hands the result on as `body`, with the
 * fix count in `normalizedFixes` and `X-Input-Normalized`, and counted per API key in `metrics`.
 * Ambiguous values → 400 naming each field.
 */
export const normalize = ({ specFor, modelOf = modelParam, metrics }: NormalizeOptions): MiddlewareHandler<AppEnv> =>
  async function normalize(c, next) {
    const model = modelFrom(c, modelOf, 'normalize')
    // The spec first: an unknown model is a 404 whatever the body looks like.
    const spec = await specFor(c, model)
    const { body, fixes } = normalizeBody(await jsonBody(c), spec)
    c.set('body', body)
    c.set('normalizedFixes', fixes)
    const caller = c.get('caller')
    if (fixes > 0 && caller && metrics) {
      // Counting must neither delay nor fail the request it counts.
      inBackground(c, metrics(c).record(caller.name, fixes).catch((err: unknown) => {
        console.log(JSON.stringify({ level: 'warn', msg: 'normalization fixes not counted', key: caller.name, error: err instanceof Error ? err.message : String(err) }))
      }))
    }
    await next()
    // Problems from later stages carry it too: client bugs show best next to the 400 they cause.
    c.res.headers.set(INPUT_NORMALIZED_HEADER, String(fixes))
  }
