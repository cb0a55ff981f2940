import { describe, expect, it } from 'vitest'
import { psi } from '../../../shared/drift/statistics.ts'
import { controllerConfig } from '../../../edge/rollout/controller-config.ts'
import { decide, windowMinutes, type PolicyInput } from '../../../edge/rollout/policy.ts'
import { rolloutSchema } from '../../../edge/rollout/rollout.ts'
import { MINUTE, T0, canaryRollout, histogram, window } from './support.ts'

const config = controllerConfig()
/** Past the dwell time, one clean window short of stepping: the next clean window steps. */
const ready = { clean_streak: 2 }
const input = (overrides: Partial<PolicyInput> = {}): PolicyInput => ({
  rollout: canaryRollout(1, ready),
  stable: window(2),
  canary: window(3),
  config,
  now: T0 + 10 * MINUTE,
  ...overrides,
})
const shifted = (version: number, shift: number, rows = 5_000) => window(version, { rows, prediction_counts: histogram(rows, shift) })

describe('rollback rules', () => {
  it('rolls back on a single NaN output, whatever the row count', () => {
    const { decision } = decide(input({ canary: window(3, { rows: 3, requests: 3, nan_outputs: 1 }) }))
    expect(decision).toMatchObject({ action: 'rollback', from_weight: 1, to_weight: 0, reason: 'canary produced 1 NaN/Inf outputs' })
  })

  it('rolls back when the error rate exceeds stable\'s by more than the margin, and not at the margin', () => {
    const stable = window(2, { requests: 1_000, errors: 10 })
    const at = decide(input({ stable, canary: window(3, { requests: 1_000, errors: 30 }) }))
    expect(at.decision.action).not.toBe('rollback')
    const over = decide(input({ stable, canary: window(3, { requests: 1_000, errors: 31 }) }))
    expect(over.decision).toMatchObject({ action: 'rollback', to_weight: 0 })
    expect(over.decision.reason).toBe("canary error rate 3.10% exceeds stable's 1.00% by more than 2.00%")
    expect(over.decision.numbers.canary).toMatchObject({ requests: 1_000, errors: 31, error_rate: 0.031 })
  })

  it('judges the error rate only once the canary has the minimum requests', () => {
    const few = decide(input({ canary: window(3, { requests: 199, errors: 100 }) }))
    expect(few.decision.action).not.toBe('rollback')
    const enough = decide(input({ canary: window(3, { requests: 200, errors: 100 }) }))
    expect(enough.decision.action).toBe('rollback')
  })

  it('rolls back a canary whose realized quality is worse than stable\'s by more than the margin, once both arms have the labels', () => {
    const figures = (labels: number, accuracy: number) => ({ labels, accuracy, roc_auc: accuracy, log_loss: 1 - accuracy, ece: 0.01 })
    const stable = window(2, { realized: figures(500, 0.82) })
    const at = decide(input({ stable, canary: window(3, { realized: figures(500, 0.77) }) }))
    expect(at.decision.action).toBe('step')
    const over = decide(input({ stable, canary: window(3, { realized: figures(500, 0.76) }) }))
    expect(over.decision).toMatchObject({ action: 'rollback', to_weight: 0 })
    expect(over.decision.reason).toBe("canary realized accuracy 0.760 is worse than stable's 0.820 by more than 0.05 (500/500 labels)")
    expect(over.decision.numbers.canary.realized).toMatchObject({ labels: 500, accuracy: 0.76 })
    // Too few labels on either arm: the figure is not evidence yet.
    expect(decide(input({ stable: window(2, { realized: figures(199, 0.82) }), canary: window(3, { realized: figures(500, 0.5) }) })).decision.action).toBe('step')
    expect(decide(input({ stable, canary: window(3, { realized: figures(199, 0.5) }) })).decision.action).toBe('step')
    // Log loss is worse when higher; AUC as accuracy.
    const byLoss = { ...config, qualityMetric: 'log_loss' as const }
    expect(decide(input({ config: byLoss, stable, canary: window(3, { realized: { ...figures(500, 0.82), log_loss: 0.24 } }) })).decision.action).toBe('rollback')
    expect(decide(input({ config: byLoss, stable, canary: window(3, { realized: { ...figures(500, 0.82), log_loss: 0.12 } }) })).decision.action).toBe('step')
  })

  it('keeps a canary exactly at the quality margin and rolls back one just past it (figures exact in binary)', () => {
    const figures = (accuracy: number) => ({ labels: 500, accuracy, roc_auc: accuracy, log_loss: 1 - accuracy, ece: 0.01 })
    const margined = { ...config, qualityMargin: 0.0625 }
    const stable = window(2, { realized: figures(0.75) })
    // 0.75 - 0.6875 is exactly 0.0625: "more than the margin" is strict.
    expect(decide(input({ config: margined, stable, canary: window(3, { realized: figures(0.6875) }) })).decision.action).toBe('step')
    expect(decide(input({ config: margined, stable, canary: window(3, { realized: figures(0.6796875) }) })).decision.action).toBe('rollback')
  })

  it('counts calls that failed at the edge into the error rate it quotes', () => {
    const { decision } = decide(input({ stable: window(2, { requests: 1_000, errors: 0 }), canary: window(3, { requests: 300, errors: 100, edge_failures: 100 }) }))
    expect(decision).toMatchObject({ action: 'rollback' })
    expect(decision.numbers.canary).toMatchObject({ edge_failures: 100, errors: 100 })
  })

  it('rolls back on the third critical prediction-drift window, holding on the first two', () => {
    const canary = shifted(3, 2.5)
    const first = decide(input({ canary, rollout: canaryRollout(5) }))
    expect(first.decision).toMatchObject({ action: 'hold', to_weight: 5, reason: 'prediction drift critical (1 of 3 windows)' })
    expect(first.streaks).toEqual({ critical_streak: 1, clean_streak: 0 })
    const second = decide(input({ canary, rollout: canaryRollout(5, first.streaks) }))
    expect(second.decision.reason).toBe('prediction drift critical (2 of 3 windows)')
    const third = decide(input({ canary, rollout: canaryRollout(5, second.streaks) }))
    expect(third.decision).toMatchObject({ action: 'rollback', from_weight: 5, to_weight: 0, reason: 'prediction drift critical for 3 windows' })
    expect(third.decision.numbers.psi).toBeGreaterThan(0.2)
  })
})

describe('streaks', () => {
  it('an ok window clears the critical streak; a warning keeps it and clears the clean streak', () => {
    expect(decide(input({ rollout: canaryRollout(5, { critical_streak: 2 }) })).streaks).toEqual({ critical_streak: 0, clean_streak: 1 })
    const warned = decide(input({ rollout: canaryRollout(5, { critical_streak: 2, clean_streak: 2 }), canary: shifted(3, 1.5) }))
    expect(warned.decision).toMatchObject({ action: 'hold', reason: 'prediction drift in the warning band' })
    expect(warned.streaks).toEqual({ critical_streak: 2, clean_streak: 0 })
  })

  it('a window too small to judge leaves both streaks as they were', () => {
    const { decision, streaks } = decide(input({ rollout: canaryRollout(5, { critical_streak: 1, clean_streak: 2 }), canary: window(3, { rows: 999 }) }))
    expect(decision).toMatchObject({ action: 'hold', reason: 'waiting for data: canary below 1000 rows' })
    expect(decision.numbers.psi).toBeNull()
    expect(streaks).toEqual({ critical_streak: 1, clean_streak: 2 })
  })

  it('counts clean windows only as far as stepping needs them', () => {
    expect(decide(input({ rollout: canaryRollout(1, { clean_streak: 3 }), now: T0 })).streaks.clean_streak).toBe(3)
  })
})

describe('holds', () => {
  it('holds while either arm is below the minimum rows, exactly the minimum being enough', () => {
    expect(decide(input({ stable: window(2, { rows: 999 }), canary: window(3, { rows: 999 }) })).decision.reason).toBe('waiting for data: stable and canary below 1000 rows')
    expect(decide(input({ stable: window(2, { rows: 999 }) })).decision.reason).toBe('waiting for data: stable below 1000 rows')
    expect(decide(input({ stable: window(2, { rows: 1_000 }), canary: window(3, { rows: 1_000 }) })).decision.action).toBe('step')
  })

  it('holds on the PSI warning threshold and steps just below it', () => {
    const stable = window(2, { rows: 100_000, prediction_counts: histogram(100_000) })
    const canary = window(3, { rows: 100_000, prediction_counts: histogram(100_000, 1) })
    const value = psi(stable.prediction_counts, canary.prediction_counts)
    expect(decide(input({ stable, canary, config: controllerConfig({ psiWarning: value }) })).decision.action).toBe('hold')
    expect(decide(input({ stable, canary, config: controllerConfig({ psiWarning: value * 1.000001 }) })).decision.action).toBe('step')
  })

  it('raises the thresholds to the no-drift bound when the windows are small', () => {
    const small = decide(input({ config: controllerConfig({ minRows: 50 }), stable: window(2, { rows: 60 }), canary: window(3, { rows: 60 }) }))
    expect(small.decision.numbers.psi_warning).toBeGreaterThan(0.1)
    expect(small.decision.numbers.psi_critical).toBeGreaterThan(small.decision.numbers.psi_warning)
    const large = decide(input())
    expect(large.decision.numbers).toMatchObject({ psi_warning: 0.1, psi_critical: 0.2 })
  })

  it('holds on a p95 breach (ratio plus slack), not at it', () => {
    const stable = window(2, { p95_ms: 20 })
    expect(decide(input({ stable, canary: window(3, { p95_ms: 35 }) })).decision.action).toBe('step')
    const slow = decide(input({ stable, canary: window(3, { p95_ms: 35.1 }) }))
    expect(slow.decision).toMatchObject({ action: 'hold', reason: "canary p95 above 1.5× stable's + 5 ms" })
    expect(slow.streaks.clean_streak).toBe(0)
  })

  it('dwells at each weight for the configured time', () => {
    expect(decide(input({ now: T0 + 10 * MINUTE - 1 })).decision).toMatchObject({ action: 'hold', reason: 'dwelling at 1% for 10 min' })
    expect(decide(input({ now: T0 + 10 * MINUTE })).decision.action).toBe('step')
  })

  it('waits for the configured clean windows after the dwell', () => {
    const { decision } = decide(input({ rollout: canaryRollout(1, { clean_streak: 1 }) }))
    expect(decision).toMatchObject({ action: 'hold', reason: 'waiting for 3 clean windows at 1%' })
  })
})

describe('input drift on both arms', () => {
  it('alerts and leaves the weights, even with too few rows to compare predictions', () => {
    const { decision } = decide(input({ rollout: canaryRollout(5), stable: window(2, { input_drift: 'critical' }), canary: window(3, { rows: 10, input_drift: 'warning' }) }))
    expect(decision).toMatchObject({ action: 'alert', from_weight: 5, to_weight: 5 })
    expect(decision.reason).toContain('stable critical, canary warning')
  })

  it('does not alert when only one arm drifts, and never instead of a rollback', () => {
    expect(decide(input({ canary: window(3, { input_drift: 'critical' }) })).decision.action).toBe('step')
    expect(decide(input({ stable: window(2, { input_drift: 'insufficient' }), canary: window(3, { input_drift: 'warning' }) })).decision.action).toBe('step')
    const both = { stable: window(2, { input_drift: 'warning' as const }), canary: window(3, { input_drift: 'warning' as const, nan_outputs: 2 }) }
    expect(decide(input(both)).decision.action).toBe('rollback')
  })
})

describe('steps and promotion', () => {
  it.each([[1, 5], [5, 20], [20, 50]])('steps a healthy canary from %d to %d', (from, to) => {
    const { decision } = decide(input({ rollout: canaryRollout(from, ready) }))
    expect(decision).toMatchObject({ action: 'step', from_weight: from, to_weight: to })
  })

  it('promotes instead of stepping to 100, so there is always stable traffic to compare against', () => {
    expect(decide(input({ rollout: canaryRollout(50, ready) })).decision).toMatchObject({ action: 'promote', from_weight: 50, to_weight: 100 })
  })

  it('follows a configured step list, from a weight between steps', () => {
    const steps = controllerConfig({ steps: [10, 100] })
    expect(decide(input({ config: steps, rollout: canaryRollout(3, ready) })).decision).toMatchObject({ action: 'step', to_weight: 10 })
    expect(decide(input({ config: steps, rollout: canaryRollout(10, ready) })).decision.action).toBe('promote')
  })

  it('takes the steps as shares of the canary and baseline together, leaving other arms alone', () => {
    const rollout = rolloutSchema.parse({
      salt: 's',
      arms: [{ variant: 'stable', version: 2, weight: 76 }, { variant: 'challenger', version: 1, weight: 20 }, { variant: 'canary', version: 3, weight: 4 }],
      canary: { variant: 'canary', baseline_variant: 'stable', step_started_at: T0, ...ready },
    })
    expect(decide(input({ rollout })).decision).toMatchObject({ action: 'step', from_weight: 4, to_weight: 16, reason: 'healthy at 5% for 10 min' })
  })

  it('quotes the numbers behind the decision', () => {
    const { decision } = decide(input({ now: T0 + 12 * MINUTE }))
    expect(decision.numbers).toMatchObject({
      window_minutes: 13, // the step's first minute bucket through the current one
      stable: { version: 2, rows: 5_000, error_rate: 0, p95_ms: 12, nan_outputs: 0, input_drift: 'ok' },
      canary: { version: 3, rows: 5_000 },
      psi: 0,
      critical_streak: 0,
      clean_streak: 3,
    })
  })
})

describe('window length', () => {
  it("spans the minute buckets from the step start's through the current one, at most the configured maximum", () => {
    expect(windowMinutes(T0, T0, config)).toBe(1)
    expect(windowMinutes(T0, T0 + 59_999, config)).toBe(1)
    // A step begun late in a minute and read early in the next needs both minutes.
    expect(windowMinutes(T0 + 59_000, T0 + 61_000, config)).toBe(2)
    expect(windowMinutes(T0, T0 + 90_000, config)).toBe(2)
    expect(windowMinutes(T0, T0 + 17 * MINUTE, config)).toBe(18)
    expect(windowMinutes(T0, T0 + 600 * MINUTE, config)).toBe(60)
  })
})
