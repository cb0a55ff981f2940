import { noDriftPsiQuantile, psi } from '../../shared/drift/statistics.ts'
import { canaryArms, type Rollout } from './rollout.ts'
import type { ControllerConfig, QualityMetric } from './controller-config.ts'
import type { QualityFigures } from '../../shared/quality.ts'
import type { ArmWindow } from './monitor-source.ts'

/** `start_canary`: a canary started from the shadow version (shadow-promotion.ts); the rest move a running canary. */
export type Action = 'rollback' | 'step' | 'promote' | 'hold' | 'alert' | 'start_canary'

/** One arm's window as a decision quotes it. */
export interface ArmNumbers {
  version: number
  rows: number
  requests: number
  errors: number
  error_rate: number
  nan_outputs: number
  p95_ms: number
  input_drift: ArmWindow['input_drift']
  /** Of requests and errors: calls the backend never answered, counted at the edge. */
  edge_failures: number
  /** Realized quality from feedback labels in the window; null where none is counted. */
  realized: QualityFigures | null
}

/** The numbers behind a decision. */
export interface DecisionNumbers {
  window_minutes: number
  stable: ArmNumbers
  canary: ArmNumbers
  /** PSI of the canary's prediction histogram against the stable arm's; null while either arm has too few rows. */
  psi: number | null
  /** The thresholds applied: the configured ones, raised to the no-drift bound of this window's sizes. */
  psi_warning: number
  psi_critical: number
  critical_streak: number
  clean_streak: number
}

export interface Decision {
  action: Action
  /** The canary arm's weight before and after. */
  from_weight: number
  to_weight: number
  reason: string
  numbers: DecisionNumbers
}

/** The canary's counters after this window. */
export interface Streaks {
  critical_streak: number
  clean_streak: number
}

export interface PolicyInput {
  /** A rollout with a canary. */
  rollout: Rollout
  stable: ArmWindow
  canary: ArmWindow
  config: ControllerConfig
  now: number
}

// Two samples of one distribution exceed these PSI quantiles in 1% and 0.1% of windows: below
// them a threshold would alarm on sampling noise alone.
const NO_DRIFT_WARNING_QUANTILE = 0.99
const NO_DRIFT_CRITICAL_QUANTILE = 0.999

/**
 * The PSI that two samples of the same distribution exceed with probability 1 − q. PSI is the
 * symmetric (Jeffreys) divergence, and n·m/(n + m) times it tends to χ² with bins − 1 degrees of
 * freedom when nothing drifted.
 */
const noDriftBound = (reference: readonly number[], observed: readonly number[], q: number): number => {
  const n = reference.reduce((s, c) => s + c, 0)
  const m = observed.reduce((s, c) => s + c, 0)
  const bins = reference.filter((c, i) => c + (observed[i] ?? 0) > 0).length
  return n === 0 || m === 0 ? 0 : noDriftPsiQuantile(q, bins, n, m)
}

const errorRate = (w: ArmWindow): number => (w.requests > 0 ? w.errors / w.requests : 0)

const quote = (w: ArmWindow): ArmNumbers => ({
  version: w.version,
  rows: w.rows,
  requests: w.requests,
  errors: w.errors,
  error_rate: errorRate(w),
  nan_outputs: w.nan_outputs,
  p95_ms: w.p95_ms,
  input_drift: w.input_drift,
  edge_failures: w.edge_failures ?? 0,
  realized: w.realized ?? null,
})

/**
 * How much worse the canary's realized `metric` is than stable's (positive = worse), once both
 * arms have `minLabels` labels and the figure; undefined before that.
 */
const qualityShortfall = (stable: ArmWindow, canary: ArmWindow, metric: QualityMetric, minLabels: number): { stable: number; canary: number; worse: number } | undefined => {
  const s = stable.realized
  const k = canary.realized
  if (!s || !k || s.labels < minLabels || k.labels < minLabels) return undefined
  const a = s[metric]
  const b = k[metric]
  if (a === null || b === null) return undefined
  return { stable: a, canary: b, worse: metric === 'log_loss' ? b - a : a - b }
}

/**
 * Why a step should wait for labels still to come: the model keeps its predictions for feedback,
 * an arm has fewer than `minLabels` for the predictions served in the step, and the step is within
 * `labelMaxDelayMinutes` past its dwell. Labels are counted by serving time, so each tick re-reads
 * the same step's predictions with whatever labels arrived since.
 */
const labelsAwaited = (stable: ArmWindow, canary: ArmWindow, config: ControllerConfig, sinceStepMs: number): string | undefined => {
  if (!canary.labels_expected || sinceStepMs >= (config.dwellMinutes + config.labelMaxDelayMinutes) * 60_000) return undefined
  const have = (w: ArmWindow) => w.realized?.labels ?? 0
  if (have(stable) >= config.minLabels && have(canary) >= config.minLabels) return undefined
  return `${have(canary)} canary and ${have(stable)} stable of ${config.minLabels} labels, waiting up to ${config.labelMaxDelayMinutes} min past the dwell`
}

const percent = (rate: number): string => `${(rate * 100).toFixed(2)}%`
const drifting = (w: ArmWindow): boolean => w.input_drift === 'warning' || w.input_drift === 'critical'

/**
 * Minutes of traffic a tick reads: the backend's one-minute buckets from the one the step began in
 * through the current one (so no traffic of the step falls outside when a round straddles a
 * minute), at most the configured maximum.
 */
export const windowMinutes = (stepStartedAt: number, now: number, config: ControllerConfig): number =>
  Math.min(config.maxWindowMinutes, Math.max(1, Math.floor(now / 60_000) - Math.floor(stepStartedAt / 60_000) + 1))

/**
 * What to do with a canary after one window, canary against stable on the same traffic, first
 * rule that applies:
 *
 * 1. any NaN/Inf output → roll back (no minimum: one is proof enough);
 * 2. error rate above stable's by more than the margin, once the canary has `minRequests` → roll back;
 * 3. realized quality (feedback labels) worse than stable's by more than `qualityMargin` in
 *    `qualityMetric`, once both arms have `minLabels` labels → roll back: a canary can be wrong
 *    with the very prediction histogram stable has, which drift cannot see;
 * 4. the `criticalWindows`-th critical prediction-drift window → roll back;
 * 5. input drift (warning or critical) on both arms → alert: the traffic moved, not the canary,
 *    so the weights stay;
 * 6. fewer than `minRows` rows on either arm → hold (PSI and p95 of a few rows are noise);
 * 7. prediction drift critical (a streak short of rollback) or in the warning band → hold;
 * 8. canary p95 above stable p95 × `p95Ratio` + `p95SlackMs` → hold, not roll back: latency
 *    moves with load and placement, and a slow but correct canary hurts nobody at a small weight;
 * 9. less than `dwellMinutes` at this weight, or fewer than `cleanWindows` clean windows → hold;
 * 10. for a model with feedback on, fewer than `minLabels` labels on either arm for the predictions
 *    served in the step, up to `labelMaxDelayMinutes` past the dwell → hold: labels come late, and
 *    rule 3 can judge the step only once they have (a label counts for the step it was served in);
 * 11. otherwise the next step, or promotion when the next step is 100 (a canary at 100 would
 *    leave no stable traffic to compare against).
 *
 * Streaks: a critical window adds to `critical_streak`, an ok one clears it, and a warning or
 * too-small window leaves it, so a canary alternating critical and warning still rolls back.
 * `clean_streak` counts windows with PSI ok and no latency breach, capped at `cleanWindows`
 * (stored state, so it stops changing once it suffices); any other sufficient window zeroes it.
 */
export const decide = ({ rollout, stable, canary, config, now }: PolicyInput): { decision: Decision; streaks: Streaks } => {
  const arms = canaryArms(rollout)
  if (!arms) throw new Error('the rollout runs no canary')
  const { state } = arms
  const from = arms.canary.weight
  const pair = from + arms.baseline.weight
  const share = (from / pair) * 100
  const shown = `${Number(share.toFixed(2))}%`

  const enoughRows = stable.rows >= config.minRows && canary.rows >= config.minRows
  const warning = Math.max(config.psiWarning, noDriftBound(stable.prediction_counts, canary.prediction_counts, NO_DRIFT_WARNING_QUANTILE))
  const critical = Math.max(config.psiCritical, noDriftBound(stable.prediction_counts, canary.prediction_counts, NO_DRIFT_CRITICAL_QUANTILE))
  const drift = enoughRows ? psi(stable.prediction_counts, canary.prediction_counts) : null
  const verdict = drift === null ? 'insufficient' : drift >= critical ? 'critical' : drift >= warning ? 'warning' : 'ok'
  const slow = enoughRows && canary.p95_ms > stable.p95_ms * config.p95Ratio + config.p95SlackMs

  const streaks: Streaks = {
    critical_streak: verdict === 'critical' ? state.critical_streak + 1 : verdict === 'ok' ? 0 : state.critical_streak,
    clean_streak: verdict === 'insufficient' ? state.clean_streak : verdict === 'ok' && !slow ? Math.min(state.clean_streak + 1, config.cleanWindows) : 0,
  }
  const numbers: DecisionNumbers = {
    window_minutes: windowMinutes(state.step_started_at, now, config),
    stable: quote(stable),
    canary: quote(canary),
    psi: drift,
    psi_warning: warning,
    psi_critical: critical,
    ...streaks,
  }
  const decision = (action: Action, to: number, reason: string) => ({ decision: { action, from_weight: from, to_weight: to, reason, numbers }, streaks })
  const hold = (reason: string) => decision('hold', from, reason)

  if (canary.nan_outputs > 0) return decision('rollback', 0, `canary produced ${canary.nan_outputs} NaN/Inf outputs`)
  const excess = errorRate(canary) - errorRate(stable)
  if (canary.requests >= config.minRequests && excess > config.errorRateMargin) {
    return decision('rollback', 0, `canary error rate ${percent(errorRate(canary))} exceeds stable's ${percent(errorRate(stable))} by more than ${percent(config.errorRateMargin)}`)
  }
  const shortfall = qualityShortfall(stable, canary, config.qualityMetric, config.minLabels)
  if (shortfall && shortfall.worse > config.qualityMargin) {
    const figure = (v: number) => v.toFixed(3)
    return decision('rollback', 0, `canary realized ${config.qualityMetric} ${figure(shortfall.canary)} is worse than stable's ${figure(shortfall.stable)} by more than ${config.qualityMargin} (${canary.realized!.labels}/${stable.realized!.labels} labels)`)
  }
  if (verdict === 'critical' && streaks.critical_streak >= config.criticalWindows) {
    return decision('rollback', 0, `prediction drift critical for ${streaks.critical_streak} windows`)
  }
  if (drifting(stable) && drifting(canary)) {
    return decision('alert', from, `input drift on both arms (stable ${stable.input_drift}, canary ${canary.input_drift}): the traffic changed, weights left alone`)
  }
  if (!enoughRows) {
    const short = [stable.rows < config.minRows && 'stable', canary.rows < config.minRows && 'canary'].filter(Boolean).join(' and ')
    return hold(`waiting for data: ${short} below ${config.minRows} rows`)
  }
  if (verdict === 'critical') return hold(`prediction drift critical (${streaks.critical_streak} of ${config.criticalWindows} windows)`)
  if (verdict === 'warning') return hold('prediction drift in the warning band')
  if (slow) return hold(`canary p95 above ${config.p95Ratio}× stable's + ${config.p95SlackMs} ms`)
  if (now - state.step_started_at < config.dwellMinutes * 60_000) return hold(`dwelling at ${shown} for ${config.dwellMinutes} min`)
  if (streaks.clean_streak < config.cleanWindows) return hold(`waiting for ${config.cleanWindows} clean windows at ${shown}`)
  const waitingForLabels = labelsAwaited(stable, canary, config, now - state.step_started_at)
  if (waitingForLabels) return hold(`waiting for labels of the predictions served at ${shown}: ${waitingForLabels}`)
  const next = config.steps.find((s) => s > share + 1e-9) ?? 100
  if (next >= 100) return decision('promote', pair, `healthy at ${shown} for ${config.dwellMinutes} min: promoted`)
  // To whole buckets (hundredths of a percent): the layout gives each arm whole buckets.
  const to = Math.round(pair * next) / 100
  return decision('step', to, `healthy at ${shown} for ${config.dwellMinutes} min`)
}
