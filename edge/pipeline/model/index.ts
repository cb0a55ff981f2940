import { requestDeadline } from '../forward/deadline.ts'
import type { RequestIdVariables } from '../request-id/index.ts'
import type { Stage } from '../stage.ts'
import { type ModelDescription, type PredictableModel, predictable } from '../../backend-client/catalog.ts'
import type { ModelCatalog } from '../../backend-client/catalog.ts'

export interface ModelVariables {
  /** The model named in the path, as the backend describes it. */
  model: ModelDescription
}

type ModelNeeds = RequestIdVariables & { isolate: { catalog: ModelCatalog } }

/**
 * Looks the path's model up in the catalog, once per request and before the body is read: an
 * unknown model is a 404 whatever the body holds. A cold catalog waits on the backend within
 * the request's deadline.
 */
export const model = (): Stage<ModelNeeds, ModelVariables> =>
  async function model(c, next) {
    c.set('model', await c.get('isolate').catalog.describe(c.req.param('model') ?? '', c.get('requestId'), { deadlineAt: requestDeadline(c) }))
    await next()
  }

/** The same for the predict route: a model without a feature spec and postprocess is a 404 naming the route it has. */
export const predictModel = (): Stage<ModelNeeds, { model: PredictableModel }> =>
  async function predictModel(c, next) {
    c.set('model', predictable(await c.get('isolate').catalog.describe(c.req.param('model') ?? '', c.get('requestId'), { deadlineAt: requestDeadline(c) })))
    await next()
  }
