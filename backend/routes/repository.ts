import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../env.ts'
import { badRequest } from '../errors.ts'
import { adminAuth } from '../middleware/bearer-auth.ts'
import { requireJson } from '../middleware/require-json.ts'

/** The repository extension: index, load, unload (admin token). */
export const repositoryRoutes = ({ manager, settings }: BackendDeps) =>
  new Hono<BackendEnv>()
    .use('/v2/repository/*', adminAuth({ token: settings.ADMIN_TOKEN }), requireJson({ maxBytes: settings.MAX_BODY_BYTES, optional: true }))
    .post('/v2/repository/index', async (c) => {
      const body = c.var.body
      if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) throw badRequest('index body must be a JSON object')
      for (const key of Object.keys(body ?? {})) if (key !== 'ready') throw badRequest(`index body has an unknown field "${key}" (allowed: ready)`)
      const readyOnly = (body as { ready?: unknown } | undefined)?.ready
      if (readyOnly !== undefined && typeof readyOnly !== 'boolean') throw badRequest('"ready" must be a boolean')
      const entries = await manager.index()
      return c.json(readyOnly ? entries.filter((e) => e.state === 'READY') : entries)
    })
    .post('/v2/repository/models/:model/load', async (c) => {
      const { model, ok, error, versions } = await manager.load(c.req.param('model'))
      if (ok) return c.json({ loaded: model, versions })
      // Nothing that needed loading loaded (or nothing serves): what serves, if anything, is as before.
      const why = error ?? versions.flatMap((v) => (v.state === 'refused' || v.state === 'failed' ? [`version ${v.version} ${v.state}: ${v.reason}`] : [])).join('; ')
      return c.json({ error: `model "${model}" could not be loaded: ${why || 'no version to load'}`, model, versions }, 409)
    })
    .post('/v2/repository/models/:model/unload', async (c) => {
      await manager.unload(c.req.param('model'))
      return c.json({ unloaded: c.req.param('model') })
    })
