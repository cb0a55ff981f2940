import { modelQuality, modelQualityResponse, windowMinutesOf, type QualityParts } from '../quality/model-quality.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import type { Responder } from '../pipeline/stage.ts'
import { answer, route } from './route.ts'

/**
 * `GET /v1/models/{m}/quality[?window=60m]`: per served version, realized quality from the
 * feedback labels of the predictions served in the window, whenever they arrived (every isolate's,
 * merged in Redis), beside the
 * backend's label-free estimate (CBPE) of the same figures for that window.
 */
const getModelQuality = (): Responder<{ isolate: QualityParts; requestId: string }> =>
  async function getModelQuality(c) {
    const minutes = windowMinutesOf(c.req.query('window') ?? '60m')
    return c.json(await modelQuality(c.get('isolate'), c.req.param().model, minutes, c.get('requestId')))
  }

export const qualityRoutes = () => [
  route({
    method: 'get',
    path: '/v1/models/:model/quality',
    guard: 'admin',
    operationId: 'getModelQuality',
    summary: 'Realized quality from feedback beside the label-free estimate, per version',
    description: 'Per served version: accuracy (by the model threshold), binned ROC AUC, log loss and ECE of the feedback labels of the predictions served in the window (however late the labels came; a window up to 168h, longer than 24h read in whole hours), merged across isolates; the backend\'s CBPE estimate of the same figures for the window, when its drift report carries one; label delays; calls the backend never answered.',
    tag: 'rollout',
    parameters: ['Model', 'QualityWindow'],
    answers: { 200: { description: 'the quality of each version', schema: modelQualityResponse, headers: RATE_LIMIT } },
    problems: [400, 404, 502],
    handle: answer(getModelQuality()),
  }),
] as const
