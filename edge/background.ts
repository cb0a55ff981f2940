import type { Context } from 'hono'

/**
 * Work that must not delay the response: Workers keep it alive with waitUntil; outside a
 * Workers runtime (app.request in Node) there is no execution context and it just runs.
 */
export const inBackground = (c: Pick<Context, 'executionCtx'>, work: Promise<void>): void => {
  try {
    c.executionCtx.waitUntil(work)
  } catch {
    void work
  }
}
