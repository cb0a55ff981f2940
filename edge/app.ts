import { Hono } from 'hono'
import { secureHeaders } from 'hono/secure-headers'
import type { AppEnv } from './env.ts'
import { requestId } from './middleware/request-id.ts'
import { requireJson } from './middleware/require-json.ts'
import { notFound, onError } from './on-error.ts'

export interface EdgeAppOptions {
  maxBodyBytes?: number
}

/**
 * The edge worker's HTTP surface. The pipeline runs in the order of DESIGN's request path:
 * request id → secure headers → body checks → (auth → rate limit → normalize → validate →
 * enrich → route → forward, added as they land) → respond; every failure leaves through `onError`.
 */
export const createApp = ({ maxBodyBytes = 256 * 1024 }: EdgeAppOptions = {}) => {
  const app = new Hono<AppEnv>()
  app.use('*', requestId(), secureHeaders(), requireJson({ maxBytes: maxBodyBytes }))
  app.get('/healthz', (c) => c.json({ ok: true, request_id: c.get('requestId') }))
  app.notFound(notFound)
  app.onError(onError)
  return app
}
