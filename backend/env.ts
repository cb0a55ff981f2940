import type { IncomingMessage } from 'node:http'
import type { Span } from '@opentelemetry/api'
import type { Logger } from './logger.ts'
import type { ModelManager } from './loader/model-manager.ts'
import type { Metrics } from './monitor/metrics.ts'
import type { Tracing } from './monitor/tracing/index.ts'
import type { Settings } from './settings.ts'

/** Everything the HTTP layer needs, built once by the server (or a test) and passed down. */
export interface BackendDeps {
  settings: Settings
  logger: Logger
  manager: ModelManager
  metrics: Metrics
  /** Whether the server takes new work: the models are warm and no drain has begun. */
  ready: () => boolean
  /** Present only when the OTEL_* variables ask for traces. */
  tracing?: Tracing
}

/** Hono environment of the backend app. */
export interface BackendEnv {
  /** What @hono/node-server passes the app; absent under `app.request()`. */
  Bindings: { incoming?: IncomingMessage } | undefined
  Variables: {
    /** The infer body, parsed by `requireJson`. */
    body: unknown
    /** The request's span, set by `traceRequest` when tracing is on. */
    requestSpan: Span | undefined
  }
}
