import { Hono } from 'hono'

/**
 * BENCHMARK FIXTURE, not part of the edge: the least any Hono JSON endpoint does per request on
 * the same path — read the body, JSON.parse it, answer one prediction per instance with
 * c.json. Measured beside the pipeline, it shows what the runtime's Request/Response machinery
 * costs before the edge does anything of its own.
 */
export const createFloorApp = () => {
  const app = new Hono()
  app.post('/v1/models/:model/predict', async (c) => {
    const body = JSON.parse(await c.req.text()) as { instances: unknown[] }
    return c.json({
      model: c.req.param('model'),
      predictions: body.instances.map(() => ({ label: 'low_risk', probability: 0.5, scores: { low_risk: 0.5, high_risk: 0.5 } })),
    })
  })
  return app
}
