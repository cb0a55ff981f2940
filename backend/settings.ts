import { z } from 'zod'
import { LOG_LEVELS } from './logger.ts'

const intFromEnv = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback)

/** Process configuration, read once from the environment. */
export const settingsSchema = z.object({
  PORT: intFromEnv(8000),
  HOST: z.string().default('127.0.0.1'),
  MODEL_REPOSITORY: z.string().default('./models'),
  /** Bearer token for the repository API; unset disables it. */
  ADMIN_TOKEN: z.string().min(16, 'ADMIN_TOKEN must be at least 16 characters').optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  /** Estimated resident size of loaded models beyond which the least recently used is unloaded. */
  MODEL_MEMORY_BUDGET_MB: intFromEnv(2048, 1),
  MAX_BODY_BYTES: intFromEnv(8 * 1024 * 1024, 1),
  /** Largest batch dimension one request may carry (bigger ones are split into batches). */
  MAX_REQUEST_ROWS: intFromEnv(1024, 1),
  SHUTDOWN_GRACE_MS: intFromEnv(25_000),
  /** `off` serves every request as its own run (for comparison); `on` uses each model's dynamic_batching. */
  BATCHING: z.enum(['on', 'off']).default('on'),
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
