import type { ModelCatalog } from '../backend-client/catalog.ts'
import type { Transport } from '../backend-client/transport.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { modelDescription, modelList } from '../openapi/schemas.ts'
import { requestDeadline } from '../pipeline/forward/deadline.ts'
import type { RequestIdVariables } from '../pipeline/request-id/index.ts'
import type { Responder } from '../pipeline/stage.ts'
import { defaultRollout } from '../rollout/rollout.ts'
import type { RolloutStore } from '../stores/rollouts/rollout-store.ts'
import { answer, route } from './route.ts'

/** `GET /v1/models`: the models a client may call. */
const listModels = (): Responder<RequestIdVariables & { isolate: { transport: Pick<Transport, 'models'> } }> =>
  async function listModels(c) {
    const { transport } = c.get('isolate')
    return c.json({ models: (await transport.models(c.get('requestId'), requestDeadline(c))).map((name) => ({ name, href: `/v1/models/${name}` })) })
  }

/** `GET /v1/models/{model}`: what a client needs to call a model — versions, rollout, and features and labels when it has them (predict). */
const describeModel = (): Responder<RequestIdVariables & { isolate: { catalog: Pick<ModelCatalog, 'describe'>; rollouts: Pick<RolloutStore, 'get'> } }> =>
  async function describeModel(c) {
    const { catalog, rollouts } = c.get('isolate')
    const model = await catalog.describe(c.req.param().model, c.get('requestId'), { deadlineAt: requestDeadline(c) })
    const stored = await rollouts.get(model.name)
    const rollout = stored?.rollout ?? defaultRollout(model)
    return c.json({
      name: model.name,
      versions: model.versions.map(String),
      ...(model.spec ? { features: model.spec.features } : {}),
      ...(model.postprocess ? { labels: model.postprocess.labels } : {}),
      rollout: { arms: rollout.arms, pinnable: [...new Set([...rollout.pinnable, ...rollout.arms.map((a) => a.version)])].sort((a, b) => a - b) },
    })
  }

export const catalogRoutes = () => [
  route({
    method: 'get',
    path: '/v1/models',
    guard: 'predict',
    operationId: 'listModels',
    summary: 'Models a client may call',
    tag: 'catalog',
    answers: { 200: { description: 'the models the backend serves', schema: modelList, headers: RATE_LIMIT } },
    handle: answer(listModels()),
  }),
  route({
    method: 'get',
    path: '/v1/models/:model',
    guard: 'predict',
    operationId: 'describeModel',
    summary: 'What a client needs to call a model',
    description: 'Versions and rollout arms; the feature spec and labels when the model has them (predict).',
    tag: 'catalog',
    parameters: ['Model'],
    answers: { 200: { description: 'the model', schema: modelDescription, headers: RATE_LIMIT } },
    problems: [404],
    handle: answer(describeModel()),
  }),
] as const
