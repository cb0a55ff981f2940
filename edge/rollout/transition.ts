import { MAX_ARMS, withLayout } from './bucket-layout.ts'
import { canaryArms, type Rollout } from './rollout.ts'
import type { Decision, Streaks } from './policy.ts'

/** Whether a decision is news: holds and alerts are recorded and posted only when their reason changes. */
export const isRepeat = (rollout: Rollout, decision: Decision): boolean =>
  (decision.action === 'hold' || decision.action === 'alert') && rollout.canary?.last_reason === decision.reason

/**
 * The rollout after a decision, or undefined when it leaves the stored state as it is. The
 * canary's weight moves against its baseline's only, so other arms keep theirs and their users.
 * A rollback leaves the canary arm at weight 0 and ends the canary; a promotion gives the
 * baseline arm the canary's version and both arms' weight (and buckets), and removes the canary arm.
 */
export const nextRollout = (rollout: Rollout, decision: Decision, streaks: Streaks, now: number): Rollout | undefined => {
  const next = decided(rollout, decision, streaks, now)
  return next && withLayout(next, rollout)
}

const decided = (rollout: Rollout, decision: Decision, streaks: Streaks, now: number): Rollout | undefined => {
  const arms = canaryArms(rollout)
  if (!arms) throw new Error('the rollout runs no canary')
  const { canary, baseline, state } = arms
  const pair = canary.weight + baseline.weight
  // A change of weights is laid out afresh from the layout it replaces.
  const { canary: _ended, layout: _replaced, ...rest } = rollout
  switch (decision.action) {
    case 'rollback':
    case 'step': {
      const weights = new Map([[canary.variant, decision.to_weight], [baseline.variant, pair - decision.to_weight]])
      const moved = { ...rest, arms: rollout.arms.map((a) => ({ ...a, weight: weights.get(a.variant) ?? a.weight })) }
      if (decision.action === 'rollback') return moved
      return { ...moved, canary: { variant: state.variant, baseline_variant: state.baseline_variant, step_started_at: now, critical_streak: 0, clean_streak: 0 } }
    }
    case 'promote':
      return {
        ...rest,
        arms: rollout.arms.filter((a) => a !== canary).map((a) => (a === baseline ? { ...a, version: canary.version, weight: pair } : a)),
      }
    case 'start_canary':
      throw new Error('a canary starts from a shadow by canaryFromShadow, not from a running canary')
    case 'hold':
    case 'alert': {
      const unchanged = isRepeat(rollout, decision) && streaks.critical_streak === state.critical_streak && streaks.clean_streak === state.clean_streak
      return unchanged ? undefined : { ...rollout, canary: { ...state, ...streaks, last_reason: decision.reason } }
    }
  }
}

/**
 * The rollout once its shadow version becomes a canary at `shadow.promote.canary_percent` of all
 * traffic: a new arm taking that weight (and buckets) from the heaviest arm, which becomes its
 * baseline; the shadow ends, its version now served. A string says why it cannot start.
 */
export const canaryFromShadow = (rollout: Rollout, now: number): Rollout | string => {
  const { shadow, canary: running, layout: _replaced, ...rest } = rollout
  if (!shadow?.promote) return 'the rollout has no shadow to promote'
  if (running) return 'a canary is already running'
  const percent = shadow.promote.canary_percent
  const baseline = rollout.arms.reduce((heaviest, arm) => (arm.weight > heaviest.weight ? arm : heaviest))
  if (baseline.weight <= percent) return `the heaviest arm "${baseline.variant}" holds ${baseline.weight}%, not more than the canary's ${percent}%`
  if (baseline.version === shadow.version) return `the heaviest arm "${baseline.variant}" already serves v${shadow.version}`
  if (rollout.arms.length >= MAX_ARMS) return `the rollout already has ${MAX_ARMS} arms`
  const taken = new Set(rollout.arms.map((a) => a.variant))
  const variant = ['canary', `canary-v${shadow.version}`].find((name) => !taken.has(name))
  if (!variant) return 'arms named "canary" and "canary-v<version>" exist already'
  const next: Rollout = {
    ...rest,
    arms: [...rollout.arms.map((a) => (a === baseline ? { ...a, weight: Math.round((a.weight - percent) * 100) / 100 } : a)), { variant, version: shadow.version, weight: percent }],
    canary: { variant, baseline_variant: baseline.variant, step_started_at: now, critical_streak: 0, clean_streak: 0 },
  }
  return withLayout(next, rollout)
}

/**
 * The rollout with its canary paused at `now`: weights, layout, streaks and step clock kept, so a
 * resume continues the same step. A string says why it cannot be paused.
 */
export const pausedRollout = (rollout: Rollout, now: number): Rollout | string => {
  const arms = canaryArms(rollout)
  if (!arms) return 'the rollout runs no canary'
  if (arms.state.paused_at !== undefined) return 'the canary is already paused'
  return { ...rollout, canary: { ...arms.state, paused_at: now } }
}

/**
 * The rollout with its paused canary resumed at `now`: the step clock moved on by the time paused,
 * so the step's dwell counts only time the controller was driving it. A string says why not.
 */
export const resumedRollout = (rollout: Rollout, now: number): Rollout | string => {
  const arms = canaryArms(rollout)
  if (!arms) return 'the rollout runs no canary'
  const { paused_at: pausedAt, ...state } = arms.state
  if (pausedAt === undefined) return 'the canary is not paused'
  return { ...rollout, canary: { ...state, step_started_at: state.step_started_at + Math.max(0, now - pausedAt) } }
}
