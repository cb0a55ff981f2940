import { RetentionDays } from 'aws-cdk-lib/aws-logs'
import { z } from 'zod'
import { LOG_LEVELS } from '../../backend/logger.ts'
import type { LambdaTierOptions } from './lambda-tier-stack.ts'

/** The retention periods CloudWatch Logs accepts (numeric members of the enum). */
const RETENTIONS = new Set<number>(Object.values(RetentionDays).filter((v): v is number => typeof v === 'number'))

// `cdk -c key=value` hands every value over as a string; cdk.json may hold numbers.
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max)

/** The context keys the app reads (cdk.json or `-c`); each one is optional. */
export const lambdaTierContext = z.object({
  // Lambda's own limits: 128–10,240 MB, up to 900 s.
  memoryMb: int(128, 10_240).optional(),
  timeoutSeconds: int(1, 900).optional(),
  logRetentionDays: int(1, 3653).refine((d) => RETENTIONS.has(d), 'not a CloudWatch Logs retention period (1, 3, 5, 7, 14, 30, 60, 90, ...)').optional(),
  logLevel: z.enum(LOG_LEVELS).optional(),
  provisionedConcurrency: int(0, 10_000).optional(),
  // Default LAMBDA_TIER_DEFAULTS.reservedConcurrency; 0 stops the tier.
  reservedConcurrency: int(0, 10_000).optional(),
  // Drift merging: the Upstash REST URL and the Secrets Manager secret holding its token (both or neither).
  redisUrl: z.url().optional(),
  redisTokenSecret: z.string().min(1).optional(),
  // OTLP/HTTP export of spans and metrics; the headers (an API key, say) from a secret.
  otlpEndpoint: z.url().optional(),
  otlpHeadersSecret: z.string().min(1).optional(),
})
  .refine((c) => (c.redisUrl === undefined) === (c.redisTokenSecret === undefined), { message: 'set both redisUrl and redisTokenSecret, or neither', path: ['redisTokenSecret'] })
  .refine((c) => c.otlpHeadersSecret === undefined || c.otlpEndpoint !== undefined, { message: 'otlpHeadersSecret needs otlpEndpoint', path: ['otlpHeadersSecret'] })

export const CONTEXT_KEYS = Object.keys(lambdaTierContext.shape) as Array<keyof typeof lambdaTierContext.shape>

/** Reads and checks the context; a bad value stops the synth with the key and the reason. */
export const lambdaTierOptionsFromContext = (get: (key: string) => unknown): Partial<LambdaTierOptions> => {
  const raw = Object.fromEntries(CONTEXT_KEYS.map((key) => [key, get(key)]).filter(([, v]) => v !== undefined && v !== ''))
  const parsed = lambdaTierContext.safeParse(raw)
  if (!parsed.success) {
    throw new Error(`invalid CDK context: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`)
  }
  const { logRetentionDays, redisUrl, redisTokenSecret, otlpEndpoint, otlpHeadersSecret, ...rest } = parsed.data
  return {
    ...rest,
    ...(logRetentionDays === undefined ? {} : { logRetentionDays: logRetentionDays as RetentionDays }),
    ...(redisUrl && redisTokenSecret ? { redis: { url: redisUrl, tokenSecret: redisTokenSecret } } : {}),
    ...(otlpEndpoint ? { otlp: { endpoint: otlpEndpoint, ...(otlpHeadersSecret ? { headersSecret: otlpHeadersSecret } : {}) } } : {}),
  }
}
