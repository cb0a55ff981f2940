import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { DEFAULT_MAIN_THREAD_MAX_US } from './loader/placement.ts'
import { LOG_LEVELS } from './logger.ts'
import { DEFAULT_DRIFT_REDIS_TIMEOUT_MS } from './monitor/drift/count-store.ts'

const intFromEnv = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback)

/** Process configuration, read once from the environment. */
export const settingsSchema = z.object({
  PORT: intFromEnv(8000),
  HOST: z.string().default('127.0.0.1'),
  /** Which process this is, in the health answers (a launcher confirms it reached its own child); a fresh UUID when unset. */
  INSTANCE_ID: z.string().min(1).default(() => randomUUID()),
  MODEL_REPOSITORY: z.string().default('./models'),
  /** Bearer token for the repository API; unset disables it. */
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  /** Bearer token the edge sends on infer and metadata calls; unset leaves them open (health and /metrics always are). */
  INFER_TOKEN: z.string().min(16, 'INFER_TOKEN must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  /** Estimated resident size of loaded models beyond which the least recently used is unloaded. */
  MODEL_MEMORY_BUDGET_MB: intFromEnv(2048, 1),
  MAX_BODY_BYTES: intFromEnv(8 * 1024 * 1024, 1),
  /** Largest batch dimension one request may carry (bigger ones are split into batches). */
  MAX_REQUEST_ROWS: intFromEnv(1024, 1),
  SHUTDOWN_GRACE_MS: intFromEnv(25_000),
  /**
   * After SIGTERM: how long open connections are still answered (each answer closing its
   * connection) before the listener closes and idle connections are dropped; ends early once
   * none is open. Part of SHUTDOWN_GRACE_MS.
   */
  SHUTDOWN_DRAIN_MS: intFromEnv(5_000),
  /** Lingering close: after an answer that refuses a body still arriving, how long it is read and dropped. */
  LINGER_MS: intFromEnv(5_000),
  /** Lingering close: most bytes read and dropped after that answer. */
  LINGER_MAX_BYTES: intFromEnv(64 * 1024 * 1024),
  /** `off` serves every request as its own run (for comparison); `on` uses each model's dynamic_batching. */
  BATCHING: z.enum(['on', 'off']).default('on'),
  /**
   * Where sessions run: `worker` threads (a long run never holds the event loop), the `main`
   * thread (no thread hop per batch), or `auto`: main for a version whose largest warm-up batch
   * runs in at most EXECUTOR_MAIN_THREAD_MAX_US, threads otherwise.
   */
  EXECUTOR_PLACEMENT: z.enum(['auto', 'worker', 'main']).default('auto'),
  EXECUTOR_MAIN_THREAD_MAX_US: intFromEnv(DEFAULT_MAIN_THREAD_MAX_US),
  /** Upstash Redis REST endpoint and token: replicas merge their drift counts there. Unset: each process counts alone. */
  UPSTASH_REDIS_REST_URL: z.url().optional(),
  UPSTASH_REDIS_REST_TOKEN: z.string().min(1).optional(),
  /** `off` skips drift counting on the hot path (for the benchmark's comparison); the drift routes then 404. */
  DRIFT_MONITORING: z.enum(['on', 'off']).default('on'),
  /** How often drift count deltas are sent to Redis. */
  DRIFT_FLUSH_MS: intFromEnv(10_000, 1),
  /** Longest wait for one drift-count call to Redis (flush, marker, read); slower fails that call. */
  DRIFT_REDIS_TIMEOUT_MS: intFromEnv(DEFAULT_DRIFT_REDIS_TIMEOUT_MS, 1),
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
