import type { AuthVariables } from '../auth/index.ts'
import { jsonBody } from '../body/json-body.ts'
import type { BodyVariables } from '../body/index.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'
import type { Stage } from '../stage.ts'
import { normalizeBody } from './normalize.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'

/** Response header carrying how many input fixes normalization applied (also when 0). */
export const INPUT_NORMALIZED_HEADER = 'x-input-normalized'

export interface NormalizeVariables {
  /** The parsed JSON body, after normalization. */
  body: unknown
  /** How many input fixes normalization applied (surfaced as `X-Input-Normalized`). */
  normalizedFixes: number
}

type NormalizeNeeds = BodyVariables & AuthVariables & { model: PredictableModel; isolate: { requestMetrics: RequestMetrics } }

/**
 * Parses the JSON body (malformed → 400 with line, column and position), applies the repairs of
 * `normalizeBody` against the model's feature spec, and hands the result on as `body`, with the
 * fix count in `normalizedFixes` and `X-Input-Normalized`, and counted per API key in the
 * request metrics (flushed with the request's own count). Ambiguous values → 400 naming each field.
 */
export const normalize = (): Stage<NormalizeNeeds, NormalizeVariables> =>
  async function normalize(c, next) {
    const { body, fixes } = normalizeBody(jsonBody(c.get('bodyText')), c.get('model').spec)
    c.set('body', body)
    c.set('normalizedFixes', fixes)
    if (fixes > 0) c.get('isolate').requestMetrics.normalized(c.get('caller').name, fixes)
    await next()
    // Problems from later stages carry it too: client bugs show best next to the 400 they cause.
    c.res.headers.set(INPUT_NORMALIZED_HEADER, String(fixes))
  }
