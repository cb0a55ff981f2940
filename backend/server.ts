import { createServer, type Server } from 'node:http'
import { getRequestListener, RequestError } from '@hono/node-server'
import { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createApp } from './app.ts'
import { Connections } from './connections.ts'
import type { BackendDeps, BackendEnv } from './env.ts'
import { createLogger, errorFields, type Logger } from './logger.ts'
import { ModelManager } from './loader/model-manager.ts'
import { redisCountStore } from './monitor/drift/count-store.ts'
import { DriftMonitor } from './monitor/drift/monitor.ts'
import { StatsPublisher } from './monitor/stats-publisher.ts'
import { createUpstashClient } from '../shared/upstash-client.ts'
import { DRIFT_GAUGE_MINUTES, createMetrics } from './monitor/metrics.ts'
import { startTracing } from './monitor/tracing/index.ts'
import { versionDriftReport } from './routes/drift.ts'
import { metricsRoutes } from './routes/metrics.ts'
import { Repository } from './repository/repository.ts'
import { readSettings, type Settings } from './settings.ts'

/** Longest the last spans may take to leave at shutdown; a collector that is down must not hold the exit. */
const TRACE_FLUSH_MS = 5_000

export interface RunningServer {
  url: string
  /** Where `/metrics` is served when METRICS_PORT sets a port of its own. */
  metricsUrl?: string
  manager: ModelManager
  /**
   * Readiness off at once; open connections answered (each answer closing its connection) for the
   * drain window; then the listener closed, accepted requests answered, sessions released.
   */
  shutdown(): Promise<void>
}

const listen = (server: Server): Promise<AddressInfo> =>
  new Promise((resolve, reject) => {
    server.once('error', reject)
    server.once('listening', () => resolve(server.address() as AddressInfo))
  })

const urlOf = (address: AddressInfo): string => `http://${address.address.includes(':') ? `[${address.address}]` : address.address}:${address.port}`

/** `/metrics` alone on its own port: Prometheus reaches it, a tunnel or proxy mapping PORT does not. */
const startMetricsServer = async (settings: Settings, deps: BackendDeps): Promise<{ url: string; close(): Promise<void> }> => {
  const app = new Hono<BackendEnv>().route('/', metricsRoutes(deps))
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404))
  const server = createServer(getRequestListener(app.fetch, { hostname: settings.HOST }))
  server.listen(settings.METRICS_PORT, settings.HOST)
  const url = urlOf(await listen(server))
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** Starts the inference server; pinned models warm up after the socket listens (liveness first, readiness later). */
export const startServer = async (settings: Settings, logger: Logger = createLogger(settings.LOG_LEVEL)): Promise<RunningServer> => {
  const repository = new Repository(resolve(settings.MODEL_REPOSITORY))
  const tracing = await startTracing(logger)
  let manager: ModelManager | undefined
  const server = createServer()
  const connections = new Connections(server, { ms: settings.LINGER_MS, bytes: settings.LINGER_MAX_BYTES })
  // Off from the first moment of a drain, while the models still serve what the connections bring.
  const ready = () => !connections.draining && (manager?.ready() ?? false)
  const metrics = createMetrics({
    depths: () => manager?.depths() ?? [],
    // The batcher's limit: a version without dynamic_batching queues up to 4096 rows too.
    capacities: () => manager?.servingVersions().map((v) => ({ model: v.model, version: String(v.version), rows: v.config.dynamic_batching?.max_queue_size ?? 4096 })) ?? [],
    ready,
    // A version whose counts cannot be read (Redis down) is left out of this scrape, not the others.
    driftReports: async () => {
      const monitored = manager?.servingVersions().filter((v) => v.drift !== undefined) ?? []
      const settled = await Promise.allSettled(monitored.map((v) => versionDriftReport(v, DRIFT_GAUGE_MINUTES)))
      return settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
    },
  })
  const { UPSTASH_REDIS_REST_URL: redisUrl, UPSTASH_REDIS_REST_TOKEN: redisToken } = settings
  const store = redisUrl && redisToken ? redisCountStore({ url: redisUrl, token: redisToken, timeoutMs: settings.DRIFT_REDIS_TIMEOUT_MS }) : undefined
  // Each replica's stats for the edge, which cannot list pods (shared/replica-stats.ts).
  const statsPublisher = redisUrl && redisToken
    ? new StatsPublisher({ redis: createUpstashClient({ url: redisUrl, token: redisToken, requestTimeoutMs: settings.DRIFT_REDIS_TIMEOUT_MS }), pod: settings.POD_NAME ?? process.env.HOSTNAME ?? settings.INSTANCE_ID, everyMs: settings.STATS_PUBLISH_MS, timeoutMs: settings.DRIFT_REDIS_TIMEOUT_MS, exposition: () => metrics.exposition(), logger })
    : undefined
  const drift = settings.DRIFT_MONITORING === 'on' ? new DriftMonitor({ logger, flushMs: settings.DRIFT_FLUSH_MS, store }) : undefined
  manager = new ModelManager(repository, {
    batching: settings.BATCHING === 'on',
    placement: settings.EXECUTOR_PLACEMENT,
    mainThreadMaxUs: settings.EXECUTOR_MAIN_THREAD_MAX_US,
    memoryBudgetBytes: settings.MODEL_MEMORY_BUDGET_MB * 1024 * 1024,
    logger,
    metrics,
    ...(drift ? { drift } : {}),
    ...(tracing ? { tracing } : {}),
  })
  const deps = { settings, logger, manager, metrics, ready, ...(tracing ? { tracing } : {}) }
  const app = createApp(deps)
  // Requests that never reach Hono (a backslash in the path, a bogus Host) still get `{"error": ...}`.
  const listener = getRequestListener(app.fetch, {
    hostname: settings.HOST,
    errorHandler: (err) =>
      err instanceof RequestError
        ? Response.json({ error: `malformed request: ${err.message}` }, { status: 400 })
        : Response.json({ error: 'internal server error' }, { status: 500 }),
  })
  server.on('request', connections.listener(listener))
  server.listen(settings.PORT, settings.HOST)
  const url = urlOf(await listen(server))
  const metricsServer = settings.METRICS_PORT === undefined ? undefined : await startMetricsServer(settings, deps)
  logger.info('listening', { url, ...(metricsServer ? { metrics_url: metricsServer.url } : {}), repository: repository.root, batching: settings.BATCHING, drift_merge: store ? 'redis' : 'local', tracing: tracing ? 'on' : 'off' })
  drift?.start()
  statsPublisher?.start()
  const warm = manager.start().then(
    () => logger.info('pinned models warm', { ready: manager.ready() }),
    (err: unknown) => logger.error('start-up load failed', errorFields(err)),
  )
  const running = manager
  return {
    url,
    ...(metricsServer ? { metricsUrl: metricsServer.url } : {}),
    manager: running,
    async shutdown() {
      // The models keep serving through the window: a request that reached a socket is answered.
      await connections.drain(settings.SHUTDOWN_DRAIN_MS)
      logger.info('drain window over; closing the listener', { open_connections: connections.open })
      const closed = connections.close()
      await warm
      // From here new work on a connection still open gets 503 (with Connection: close); accepted work is answered.
      await running.shutdown()
      await closed
      // Every accepted request is answered and counted: the last deltas go now or never.
      await drift?.close()
      await statsPublisher?.close()
      // Every request span has ended by now; what is still buffered goes before the process does.
      await tracing?.shutdown(TRACE_FLUSH_MS)
      // Scraped through the drain, so the last counts are seen; closed last.
      await metricsServer?.close()
    },
  }
}

const main = async () => {
  const settings = readSettings()
  const logger = createLogger(settings.LOG_LEVEL)
  const server = await startServer(settings, logger)
  let stopping = false
  const stop = (signal: string) => {
    if (stopping) return
    stopping = true
    logger.info('shutting down', { signal, grace_ms: settings.SHUTDOWN_GRACE_MS, drain_ms: settings.SHUTDOWN_DRAIN_MS })
    const timer = setTimeout(() => {
      logger.error('shutdown grace period ran out; exiting with work in flight', { grace_ms: settings.SHUTDOWN_GRACE_MS })
      process.exit(1)
    }, settings.SHUTDOWN_GRACE_MS)
    timer.unref()
    server.shutdown().then(
      () => {
        logger.info('stopped')
        process.exit(0)
      },
      (err: unknown) => {
        logger.error('shutdown failed', errorFields(err))
        process.exit(1)
      },
    )
  }
  // A fault that escaped its handler is a bug to log, not a reason to drop every request in flight.
  process.on('unhandledRejection', (reason) => logger.error('unhandled rejection', errorFields(reason)))
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  })
}
