import type { Context } from 'hono'
import { ModelCatalog } from './catalog/model-catalog.ts'
import type { AppEnv, Bindings } from './env.ts'
import { HttpTransport } from './forward/http-transport.ts'
import type { Transport } from './forward/transport.ts'
import { MemoryRolloutStore, type RolloutStore } from './routing/rollout-store.ts'

/** What the pipeline talks to, built once per isolate from the worker's bindings. */
export interface EdgeServices {
  transport: Transport
  catalog: ModelCatalog
  rollouts: RolloutStore
}

export const createServices = (env: Bindings): EdgeServices => {
  if (!env.BACKEND_URL) throw new Error('BACKEND_URL is not configured')
  const transport = new HttpTransport({ baseUrl: env.BACKEND_URL })
  return {
    transport,
    catalog: new ModelCatalog({ transport }),
    rollouts: new MemoryRolloutStore(),
  }
}

/**
 * Bindings arrive with each request in Workers, but the services (caches, breaker, limiter)
 * must live as long as the isolate: keep one set per distinct configuration.
 */
export const servicesResolver = (build: (env: Bindings) => EdgeServices = createServices) => {
  let cached: { key: string; services: EdgeServices } | undefined
  return (c: Context<AppEnv>): EdgeServices => {
    const key = c.env?.BACKEND_URL ?? ''
    if (cached?.key !== key) cached = { key, services: build(c.env ?? ({} as Bindings)) }
    return cached.services
  }
}
