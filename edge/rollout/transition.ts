import { withLayout } from './bucket-layout.ts'
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
    case 'hold':
    case 'alert': {
      const unchanged = isRepeat(rollout, decision) && streaks.critical_streak === state.critical_streak && streaks.clean_streak === state.clean_streak
      return unchanged ? undefined : { ...rollout, canary: { ...state, ...streaks, last_reason: decision.reason } }
    }
  }
}
