import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { DEFAULT_MAIN_THREAD_MAX_US } from './loader/placement.ts'
import { LOG_LEVELS } from './logger.ts'
import { DEFAULT_DRIFT_REDIS_TIMEOUT_MS } from './monitor/drift/count-store.ts'

const intFromEnv = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback)

/**
 * Process configuration, read once from the environment. Each variable's description is what
 * docs/configuration.md says of it (`npm run docs:config` writes that table from this schema).
 */
export const settingsSchema = z.object({
  PORT: intFromEnv(8000).describe('listen port (`0` = any free port)'),
  HOST: z.string().default('127.0.0.1').describe('listen address'),
  METRICS_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe('also serve `/metrics` on this port (same `HOST`; `0` = any free port), open, for Prometheus; `/metrics` on `PORT` then needs the `INFER_TOKEN` bearer (the edge\'s backend stats), so a tunnel or proxy in front of `PORT` does not expose it. Unset: `/metrics` on `PORT` only, open'),
  INSTANCE_ID: z.string().min(1).default(() => randomUUID()).describe("this process's identity in `/v2/health/live` and `/ready` (a launcher confirms it reached its own child)").meta({ default: 'a fresh UUID' }),
  MODEL_REPOSITORY: z.string().default('./models').describe('model repository root'),
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional().describe('Bearer token for the repository API (≥ 16 chars, not `INFER_TOKEN`); unset disables it'),
  INFER_TOKEN: z
    .string()
    .min(16, 'INFER_TOKEN must be at least 16 characters')
    .optional()
    .describe(
      'Bearer token the edge must send on every `/v2` call but health (≥ 16 chars): 401 `{"error"}` without it, compared in constant time, never logged; `/v2/health/*` and `/metrics` stay open (probes, Prometheus), the repository API keeps `ADMIN_TOKEN`. Unset leaves `/v2` open (local development only; `npm start` sets one per run)',
    ),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info').describe(`${LOG_LEVELS.map((l) => `\`${l}\``).join(', ')}; JSON lines on stdout`),
  MODEL_MEMORY_BUDGET_MB: intFromEnv(2048, 1).describe('estimated resident size of loaded models beyond which the least recently used is unloaded'),
  MAX_BODY_BYTES: intFromEnv(8 * 1024 * 1024, 1).describe('request body limit (413)'),
  MAX_REQUEST_ROWS: intFromEnv(1024, 1).describe('largest batch dimension of one request (bigger ones are split into batches)'),
  SHUTDOWN_GRACE_MS: intFromEnv(25_000).describe('drain time allowed after SIGTERM'),
  SHUTDOWN_DRAIN_MS: intFromEnv(5_000).describe(
    'after SIGTERM: readiness off, open connections still answered (each answer closing its connection) for this long or until none is left, then the listener closes and idle connections are dropped; part of, and less than, `SHUTDOWN_GRACE_MS`',
  ),
  LINGER_MS: intFromEnv(5_000).describe('after an early answer (413, 401…) that refuses a body still arriving, how long the unread body is read and dropped before the socket closes, so clients that write the whole body first read the answer'),
  LINGER_MAX_BYTES: intFromEnv(64 * 1024 * 1024).describe('most bytes read and dropped after such an answer'),
  BATCHING: z.enum(['on', 'off']).default('on').describe("`on` uses each model's `dynamic_batching`; `off` runs every request alone (for comparison)"),
  EXECUTOR_PLACEMENT: z
    .enum(['auto', 'worker', 'main'])
    .default('auto')
    .describe(
      "`worker`: sessions on worker threads (a long run never holds the event loop); `main`: on the event loop's thread (no thread hop per batch); `auto`: main when the version's largest warm-up batch runs within `EXECUTOR_MAIN_THREAD_MAX_US`, else worker threads (FP16 models always on workers)",
    ),
  EXECUTOR_MAIN_THREAD_MAX_US: intFromEnv(DEFAULT_MAIN_THREAD_MAX_US).describe('the longest largest-batch run `auto` lets hold the event loop'),
  UPSTASH_REDIS_REST_URL: z.url().optional().describe('Upstash Redis REST endpoint: replicas merge their drift counts there (with the token; both or neither); unset, each process counts alone'),
  UPSTASH_REDIS_REST_TOKEN: z.string().min(1).optional().describe('its token'),
  POD_NAME: z.string().min(1).optional().describe("this replica's name in the edge's backend stats (`GET /v1/backend/stats`, per pod, through Redis); unset: `HOSTNAME` (a Kubernetes pod's name), else `INSTANCE_ID`"),
  STATS_PUBLISH_MS: intFromEnv(5_000, 1).describe('with Redis: how often this replica writes its stats snapshot there for the edge (each call within `DRIFT_REDIS_TIMEOUT_MS`); the snapshot expires after three periods, so a dead replica drops out'),
  DRIFT_MONITORING: z.enum(['on', 'off']).default('on').describe('`off` skips drift counting on the hot path (for the benchmark\'s comparison); the drift routes then 404'),
  DRIFT_FLUSH_MS: intFromEnv(10_000, 1).describe('how often drift count deltas are sent to Redis'),
  DRIFT_REDIS_TIMEOUT_MS: intFromEnv(DEFAULT_DRIFT_REDIS_TIMEOUT_MS, 1).describe(
    'budget of each drift-count call to Redis (flush, read). A flush past it is in doubt and resent whole with its write id next round (applied once either way); a drift report past it answers 503 `{"error"}` with `Retry-After: 1`; the `/metrics` scrape leaves out the drift gauges it could not read; calls queued behind a failed one fail with it',
  ),
})
  .refine((s) => (s.UPSTASH_REDIS_REST_URL === undefined) === (s.UPSTASH_REDIS_REST_TOKEN === undefined), {
    message: 'set both UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN, or neither',
    path: ['UPSTASH_REDIS_REST_TOKEN'],
  })
  // The edge holds INFER_TOKEN; the same value would make every edge an admin of the repository.
  .refine((s) => s.ADMIN_TOKEN === undefined || s.ADMIN_TOKEN !== s.INFER_TOKEN, {
    message: 'ADMIN_TOKEN must differ from INFER_TOKEN (the edge holds INFER_TOKEN; the same value would let it load and unload models)',
    path: ['ADMIN_TOKEN'],
  })
  .refine((s) => s.METRICS_PORT === undefined || s.METRICS_PORT === 0 || s.METRICS_PORT !== s.PORT, {
    message: 'METRICS_PORT must differ from PORT (unset serves /metrics on PORT)',
    path: ['METRICS_PORT'],
  })
  .refine((s) => s.SHUTDOWN_DRAIN_MS < s.SHUTDOWN_GRACE_MS, {
    message: 'SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_GRACE_MS (the drain is part of the grace period)',
    path: ['SHUTDOWN_DRAIN_MS'],
  })

export type Settings = z.infer<typeof settingsSchema>

export const readSettings = (env: NodeJS.ProcessEnv = process.env): Settings => {
  const parsed = settingsSchema.safeParse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')))
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')
    throw new Error(`invalid configuration: ${detail}`)
  }
  return parsed.data
}
