import { Hono } from 'hono'
import type { BackendDeps, BackendEnv } from '../env.ts'

/** Liveness, readiness and server metadata. */
export const healthRoutes = ({ ready: isReady, settings }: BackendDeps) =>
  new Hono<BackendEnv>()
    .get('/v2/health/live', (c) => c.json({ live: true, instance_id: settings.INSTANCE_ID }))
    .get('/v2/health/ready', (c) => {
      const ready = isReady()
      return c.json({ ready, instance_id: settings.INSTANCE_ID }, ready ? 200 : 503)
    })
    .get('/v2', (c) =>
      c.json({ name: 'edge-infer-backend', version: '0.1.0', extensions: ['model_repository', 'statistics', 'metrics', 'binary_tensor_data'] }),
    )
