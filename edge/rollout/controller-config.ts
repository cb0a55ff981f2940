import { z } from 'zod'
import type { Bindings } from '../env.ts'

/** Realized-quality figures the controller can compare; log loss is the one where lower is better. */
export const QUALITY_METRICS = ['accuracy', 'roc_auc', 'log_loss'] as const
export type QualityMetric = (typeof QUALITY_METRICS)[number]

/** The longest window the backend's drift reports cover (it keeps 180 minutes of counts, and refuses longer windows). */
export const BACKEND_MAX_WINDOW_MINUTES = 180

const steps = z
  .array(z.number().gt(0).max(100))
  .min(1)
  .refine((s) => s.every((w, i) => i === 0 || w > s[i - 1]), 'steps must increase')
  .refine((s) => s[s.length - 1] === 100, 'the last step must be 100 (promotion)')

const configSchema = z
  .strictObject({
    /**
     * Canary weights in order, as a percentage of the traffic the canary and its baseline hold
     * together (other arms keep theirs). Reaching 100 is the promotion.
     */
    steps: steps.default([1, 5, 20, 50, 100]),
    /** Minutes at a weight before the next step. */
    dwellMinutes: z.number().min(0).default(10),
    /** Rows each arm needs in a window before its prediction histograms are compared, or a step is taken. */
    minRows: z.number().int().min(1).default(1_000),
    /** Canary requests needed before its error rate can roll it back (NaN outputs need none). */
    minRequests: z.number().int().min(1).default(200),
    /** How far (absolute, 0.02 = 2 points) the canary's error rate may exceed the stable arm's. */
    errorRateMargin: z.number().min(0).max(1).default(0.02),
    /** Prediction-histogram PSI, canary against stable, that holds the canary (warning) or counts towards rollback (critical). */
    psiWarning: z.number().positive().default(0.1),
    psiCritical: z.number().positive().default(0.2),
    /** Critical windows, with no clean one between, that roll the canary back. */
    criticalWindows: z.number().int().min(1).default(3),
    /** Consecutive clean windows a step needs besides the dwell time. */
    cleanWindows: z.number().int().min(1).default(3),
    /** Canary p95 above stable p95 × ratio + slack is a latency breach (a hold). */
    p95Ratio: z.number().min(1).default(1.5),
    p95SlackMs: z.number().min(0).default(5),
    /** Longest window read: the window is the time since the step started, clamped to [1, this] minutes. */
    maxWindowMinutes: z.number().int().min(1).max(BACKEND_MAX_WINDOW_MINUTES, `the backend reports windows of at most ${BACKEND_MAX_WINDOW_MINUTES} minutes`).default(60),
    /** Labelled rows (feedback) each arm needs in a window before realized quality can roll the canary back. */
    minLabels: z.number().int().min(1).default(200),
    /** The realized-quality figure compared, canary against stable. */
    qualityMetric: z.enum(QUALITY_METRICS).default('accuracy'),
    /** How much worse (absolute: 0.05 = 5 points of accuracy or AUC, 0.05 nats of log loss) the canary's realized figure may be. */
    qualityMargin: z.number().min(0).default(0.05),
  })
  .refine((c) => c.psiCritical >= c.psiWarning, { path: ['psiCritical'], message: 'must be at least the warning threshold' })

export type ControllerConfig = z.output<typeof configSchema>

/** The controller's thresholds: the defaults with `overrides` applied, checked. */
export const controllerConfig = (overrides: Partial<ControllerConfig> = {}): ControllerConfig => configSchema.parse(overrides)

/** The worker var that sets each setting. */
const VARS = {
  steps: 'CONTROLLER_STEPS',
  dwellMinutes: 'CONTROLLER_DWELL_MINUTES',
  minRows: 'CONTROLLER_MIN_ROWS',
  minRequests: 'CONTROLLER_MIN_REQUESTS',
  errorRateMargin: 'CONTROLLER_ERROR_RATE_MARGIN',
  psiWarning: 'CONTROLLER_PSI_WARNING',
  psiCritical: 'CONTROLLER_PSI_CRITICAL',
  criticalWindows: 'CONTROLLER_CRITICAL_WINDOWS',
  cleanWindows: 'CONTROLLER_CLEAN_WINDOWS',
  p95Ratio: 'CONTROLLER_P95_RATIO',
  p95SlackMs: 'CONTROLLER_P95_SLACK_MS',
  maxWindowMinutes: 'CONTROLLER_MAX_WINDOW_MINUTES',
  minLabels: 'CONTROLLER_MIN_LABELS',
  qualityMetric: 'CONTROLLER_QUALITY_METRIC',
  qualityMargin: 'CONTROLLER_QUALITY_MARGIN',
} as const satisfies Record<keyof ControllerConfig, keyof Bindings>

/**
 * The config from `CONTROLLER_*` vars (unset or empty: the default; steps comma-separated).
 * A bad value throws naming the var: a controller must not move traffic on thresholds nobody chose.
 */
export const controllerConfigFrom = (env: Bindings): ControllerConfig => {
  const overrides: Record<string, string | number | number[]> = {}
  for (const [setting, name] of Object.entries(VARS)) {
    const raw = env[name]?.trim()
    if (!raw) continue
    overrides[setting] = setting === 'steps' ? raw.split(',').map((s) => Number(s.trim())) : setting === 'qualityMetric' ? raw : Number(raw)
  }
  const parsed = configSchema.safeParse(overrides)
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((i) => `${VARS[i.path[0] as keyof ControllerConfig] ?? 'controller config'}: ${i.message}`)
  throw new Error(`invalid controller configuration: ${problems.join('; ')}`)
}
