import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { notFound } from '../errors.ts'
import { quoteInput } from '../../shared/quote-input.ts'

/** Model metadata, readiness and statistics, with and without `/versions/{v}`. */
export const modelRoutes = ({ manager }: BackendDeps) => {
  const app = new Hono<BackendEnv>()
  // Not part of the protocol: the model list the edge's catalog offers clients (no load reasons).
  app.get('/v2/models', async (c) => {
    const byModel = new Map<string, string[]>()
    for (const entry of await manager.index()) {
      const versions = byModel.get(entry.name) ?? []
      if (entry.state === 'READY' && entry.version) versions.push(entry.version)
      byModel.set(entry.name, versions)
    }
    return c.json({ models: [...byModel].map(([name, versions]) => ({ name, ready_versions: versions })) })
  })
  for (const prefix of ['/v2/models/:model', '/v2/models/:model/versions/:version']) {
    app.get(prefix, async (c) => {
      const { model, version } = c.req.param() as { model: string; version?: string }
      const { chosen, metadata } = await manager.metadata(model, version)
      return c.json({
        ...metadata,
        parameters: {
          version: String(chosen.version),
          execution_provider: chosen.provider,
          max_batch_size: chosen.config.max_batch_size,
          instance_count: chosen.config.instance_count,
        },
        // Extensions to the protocol's metadata: the edge compiles its validation from these.
        ...(chosen.config.features ? { features: chosen.config.features } : {}),
        ...(chosen.config.postprocess ? { postprocess: chosen.config.postprocess } : {}),
        // And the edge keeps served predictions for feedback from this one.
        ...(chosen.config.feedback ? { feedback: chosen.config.feedback } : {}),
      })
    })
    app.get(`${prefix}/ready`, async (c) => {
      const { model, version } = c.req.param() as { model: string; version?: string }
      const serving = await manager.serving(model, version)
      // A version neither serving nor selected by the policy is absent, as infer and metadata find it.
      if (!serving && version !== undefined && !(await manager.repository.selected(model))?.has(Number(version))) {
        throw notFound(`model "${model}" has no version ${version} available`)
      }
      const ready = serving?.ready ?? false
      return c.json({ name: model, ...(version ? { version } : {}), ready }, ready ? 200 : 503)
    })
    app.get(`${prefix}/stats`, async (c) => {
      const { model, version } = c.req.param() as { model: string; version?: string }
      const serving = await manager.serving(model, version)
      if (!serving) throw notFound(`model ${quoteInput(model)}${version ? ` version ${quoteInput(version)}` : ''} is not loaded`)
      return c.json({
        model_stats: [{
          name: model,
          version: String(serving.version),
          execution_provider: serving.provider,
          queue_depth_rows: serving.batcher.depth,
          drain_rate_rows_per_s: Math.round(serving.batcher.drainRate),
          ...serving.stats.snapshot(),
        }],
      })
    })
  }
  return app
}
