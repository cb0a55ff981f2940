import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../env.ts'

/** Prometheus exposition of the backend's registry and its per-request tallies. */
export const metricsRoutes = ({ metrics }: BackendDeps) =>
  new Hono<BackendEnv>().get('/metrics', async (c) => {
    const body = await metrics.exposition()
    return c.body(body, 200, { 'content-type': metrics.registry.contentType })
  })
