import { Hono } from 'hono'
import type { AppEnv } from '../env.ts'
import { requestDeadline } from '../pipeline/forward/deadline.ts'
import { defaultRollout } from '../rollout/rollout.ts'

/** `GET /v1/models` (what a client may call) and `GET /v1/models/{model}`: what a client needs to call a model — versions, rollout, and features and labels when it has them (predict). */
export const catalogRoutes = () =>
  new Hono<AppEnv>()
  .get('/v1/models', async (c) => {
    const { transport } = c.get('isolate')
    return c.json({ models: (await transport.models(c.get('requestId'), requestDeadline(c))).map((name) => ({ name, href: `/v1/models/${name}` })) })
  })
  .get('/v1/models/:model', async (c) => {
    const { catalog, rollouts } = c.get('isolate')
    const model = await catalog.describe(c.req.param('model'), c.get('requestId'), { deadlineAt: requestDeadline(c) })
    const stored = await rollouts.get(model.name)
    const rollout = stored?.rollout ?? defaultRollout(model)
    return c.json({
      name: model.name,
      versions: model.versions.map(String),
      ...(model.spec ? { features: model.spec.features } : {}),
      ...(model.postprocess ? { labels: model.postprocess.labels } : {}),
      rollout: { arms: rollout.arms, pinnable: [...new Set([...rollout.pinnable, ...rollout.arms.map((a) => a.version)])].sort((a, b) => a - b) },
    })
  })
