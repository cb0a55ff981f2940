import { type Bindings, QUALITY_METRICS, controllerBindings } from '../bindings.ts'

export { BACKEND_MAX_WINDOW_MINUTES, QUALITY_METRICS } from '../bindings.ts'
export type QualityMetric = (typeof QUALITY_METRICS)[number]

/** The controller's thresholds (edge/bindings.ts has the meaning, default and bounds of each). */
export interface ControllerConfig {
  steps: number[]
  dwellMinutes: number
  minRows: number
  minRequests: number
  errorRateMargin: number
  psiWarning: number
  psiCritical: number
  criticalWindows: number
  cleanWindows: number
  p95Ratio: number
  p95SlackMs: number
  maxWindowMinutes: number
  minLabels: number
  labelMaxDelayMinutes: number
  qualityMetric: QualityMetric
  qualityMargin: number
}

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
  labelMaxDelayMinutes: 'CONTROLLER_LABEL_MAX_DELAY_MINUTES',
  qualityMetric: 'CONTROLLER_QUALITY_METRIC',
  qualityMargin: 'CONTROLLER_QUALITY_MARGIN',
} as const satisfies Record<keyof ControllerConfig, keyof Bindings>

/**
 * The config from `CONTROLLER_*` vars (unset or empty: the default; steps comma-separated).
 * A bad value throws naming the var.
 */
export const controllerConfigFrom = (env: Partial<Bindings>): ControllerConfig => {
  const parsed = controllerBindings.safeParse(env)
  if (!parsed.success) throw new Error(`invalid controller configuration: ${parsed.error.issues.map((i) => `${String(i.path[0] ?? 'controller config')}: ${i.message}`).join('; ')}`)
  const config = Object.fromEntries(Object.entries(VARS).map(([setting, name]) => [setting, parsed.data[name]]))
  return config as unknown as ControllerConfig
}

/** The controller's thresholds: the defaults with `overrides` applied, checked by the same schema as the vars. */
export const controllerConfig = (overrides: Partial<ControllerConfig> = {}): ControllerConfig =>
  controllerConfigFrom(Object.fromEntries(Object.entries(overrides).map(([setting, value]) => [VARS[setting as keyof ControllerConfig], Array.isArray(value) ? value.join(',') : String(value)])))
