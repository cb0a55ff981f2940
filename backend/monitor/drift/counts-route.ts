import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../../env.ts'
import { badRequest, notFound, unavailable } from '../../errors.ts'
import { RETAINED_MINUTES } from './minute-buckets.ts'

const DEFAULT_MINUTES = 60

const minutesOf = (query: string | undefined): number => {
  if (query === undefined) return DEFAULT_MINUTES
  const minutes = Number(query)
  if (!/^[0-9]+$/.test(query) || minutes < 1 || minutes > RETAINED_MINUTES) {
    throw badRequest(`minutes must be a whole number from 1 to ${RETAINED_MINUTES}, not "${query}"`)
  }
  return minutes
}

/**
 * `GET /v2/models/{m}/versions/{v}/drift/counts[?minutes=60]`: the raw {@link DriftCounts} of a
 * loaded version over the last minutes, every replica's when Redis is configured. The drift
 * statistics are computed from these; operators and tests read them as they are.
 */
export const driftCountsRoutes = ({ manager }: BackendDeps) =>
  new Hono<BackendEnv>().get('/v2/models/:model/versions/:version/drift/counts', async (c) => {
    const { model, version } = c.req.param()
    const minutes = minutesOf(c.req.query('minutes'))
    const serving = await manager.serving(model, version)
    if (!serving) throw notFound(`model "${model}" version ${version} is not loaded`)
    if (!serving.drift) throw notFound(`model "${model}" version ${version} has no drift counts: it lacks a baseline or a feature spec that fits it`)
    try {
      return c.json(await serving.drift.window(minutes))
    } catch (err) {
      throw unavailable(`drift counts could not be merged through Redis: ${(err as Error).message}`, 1)
    }
  })
