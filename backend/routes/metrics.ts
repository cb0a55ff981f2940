import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../env.ts'

/** Prometheus exposition of the backend's registry. */
export const metricsRoutes = ({ metrics }: BackendDeps) =>
  new Hono<BackendEnv>().get('/metrics', async (c) => {
    const body = await metrics.registry.metrics()
    return c.body(body, 200, { 'content-type': metrics.registry.contentType })
  })
