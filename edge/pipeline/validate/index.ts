import { Problem } from '../../problem.ts'
import type { PredictableModel } from '../../backend-client/catalog.ts'
import type { NormalizeVariables } from '../normalize/index.ts'
import type { Stage } from '../stage.ts'
import type { EdgeSettings } from '../../bindings.ts'
import type { PredictInput, SchemaCache } from './compile-spec.ts'

export type { PredictInput } from './compile-spec.ts'

export interface ValidateVariables {
  predict: PredictInput
}

type ValidateNeeds = NormalizeVariables & {
  model: PredictableModel
  isolate: { validators: SchemaCache } & { settings: Pick<EdgeSettings, 'maxInstances'> }
}

export interface ValidateOptions {
  /** Most field errors listed in one problem body (default 50); the detail still counts them all. */
  maxErrors?: number
}

/**
 * Validates the normalized body against the schema compiled from the model's feature spec (at
 * most the isolate's `MAX_INSTANCES` rows, compiled once per spec into the isolate's cache) and
 * hands on `predict`; otherwise 400 with every error (up to `maxErrors`) as `{ path, message }`.
 */
export const validate = ({ maxErrors = 50 }: ValidateOptions = {}): Stage<ValidateNeeds, ValidateVariables> =>
  async function validate(c, next) {
    const model = c.get('model')
    const { validators, settings } = c.get('isolate')
    const result = validators.get(model.spec, { maxInstances: settings.maxInstances }).validate(c.get('body'))
    if (!result.success) {
      const n = result.errors.length
      const shown = result.errors.slice(0, maxErrors)
      throw new Problem(
        400,
        'Bad Request',
        `the request does not match the feature spec of ${model.name}: ${n} error${n > 1 ? 's' : ''}${n > shown.length ? ` (the first ${shown.length} are listed)` : ''}`,
        { slug: 'invalid-input', errors: shown },
      )
    }
    c.set('predict', result.data)
    await next()
  }
