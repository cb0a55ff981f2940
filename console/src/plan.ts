import type { Rollout } from './api.ts'

type Arm = Rollout['arms'][number]

/** What a PUT sends: the edge derives the layout and fills in the canary's bookkeeping. */
export type RolloutPut = Omit<Rollout, 'layout' | 'canary'> & { canary?: Pick<NonNullable<Rollout['canary']>, 'variant' | 'baseline_variant'> }

export type ActionName = 'start' | 'pause' | 'resume' | 'rollback' | 'promote'

/**
 * A change the operator is asked to confirm: the rollout to PUT (none for a pause or resume, which
 * are their own POSTs and keep the canary), and what it does in words.
 */
export interface Plan {
  action: ActionName
  rollout?: RolloutPut
  summary: string
}

/** The canary's first weight, as the controller's ladder starts it. */
export const FIRST_STEP = 1
const CANARY_VARIANT = 'canary'

const describeArms = (arms: readonly Arm[]) => arms.map((a) => `${a.variant} v${a.version} ${a.weight}%`).join(', ')

/**
 * The rollout without its derived layout (the edge lays out the new weights from the stored
 * one, moving only the users whose arm changed) and without its canary: every action but a
 * start ends the controller's drive.
 */
const body = ({ layout: _layout, canary: _canary, ...rest }: Rollout): RolloutPut => rest

/**
 * The canary arm and its baseline: those the rollout's canary names, or once the controller's
 * drive ended (a PUT without one) the console's canary arm while it has weight, beside the heaviest other arm.
 */
const canaryPair = (rollout: Rollout): { canary: Arm; baseline: Arm } | undefined => {
  const named = (variant: string | undefined) => rollout.arms.find((a) => a.variant === variant)
  if (rollout.canary) {
    const canary = named(rollout.canary.variant)
    const baseline = named(rollout.canary.baseline_variant)
    return canary && baseline ? { canary, baseline } : undefined
  }
  const canary = rollout.arms.find((a) => a.variant.startsWith(CANARY_VARIANT) && a.weight > 0)
  const others = rollout.arms.filter((a) => a !== canary)
  return canary && others.length > 0 ? { canary, baseline: others.reduce((a, b) => (b.weight > a.weight ? b : a)) } : undefined
}

/** Why an action does not apply to this rollout, or undefined when it does. */
export const blocker = (rollout: Rollout, action: ActionName): string | undefined => {
  if (action === 'start') return rollout.canary ? 'a canary is already running' : undefined
  if (action === 'pause') return !rollout.canary ? 'no canary is running' : rollout.canary.paused_at !== undefined ? 'the canary is already paused' : undefined
  if (action === 'resume') return rollout.canary?.paused_at === undefined ? 'no canary is paused' : undefined
  return canaryPair(rollout) ? undefined : 'there is no canary arm with weight'
}

/**
 * The rollout that starts `version` as a canary at 1% beside the heaviest arm, which keeps the
 * rest of the pair's weight; other arms keep theirs. The controller then drives it up the ladder.
 */
const start = (rollout: Rollout, version: number): Plan => {
  const baseline = rollout.arms.reduce((a, b) => (b.weight > a.weight ? b : a))
  const variant = baseline.variant === CANARY_VARIANT ? `${CANARY_VARIANT}-2` : CANARY_VARIANT
  // An earlier canary's arm (at 0 after a rollback) makes way for the new one.
  const arms: Arm[] = [
    ...rollout.arms.filter((a) => a.variant !== variant).map((a) => (a === baseline ? { ...a, weight: a.weight - FIRST_STEP } : a)),
    { variant, version, weight: FIRST_STEP },
  ]
  const next = { ...body(rollout), arms, canary: { variant, baseline_variant: baseline.variant } }
  return { action: 'start', rollout: next, summary: `start v${version} as a canary at ${FIRST_STEP}% beside ${baseline.variant} v${baseline.version}\n${describeArms(rollout.arms)}  →  ${describeArms(arms)}` }
}

/** The change `action` makes to `rollout` (`version`: the one a start puts on the canary), or the reason it cannot. */
export const planFor = (rollout: Rollout, action: ActionName, version?: number): Plan | string => {
  const blocked = blocker(rollout, action)
  if (blocked) return blocked
  if (action === 'start') return version === undefined ? 'choose a version to start' : start(rollout, version)
  const { canary, baseline } = canaryPair(rollout)!
  const pair = canary.weight + baseline.weight
  if (action === 'pause') {
    return { action, summary: `pause canary v${canary.version} at ${canary.weight}%: the controller leaves it (weight, streaks and step clock kept) until resumed\n${describeArms(rollout.arms)}` }
  }
  if (action === 'resume') {
    return { action, summary: `resume canary v${canary.version} at ${canary.weight}%: the controller continues the same step, the paused time not counted\n${describeArms(rollout.arms)}` }
  }
  // As the controller does it: a rollback leaves the canary arm at 0, a promotion gives the baseline arm its version.
  const arms = action === 'rollback'
    ? rollout.arms.map((a) => (a === canary ? { ...a, weight: 0 } : a === baseline ? { ...a, weight: pair } : a))
    : rollout.arms.filter((a) => a !== canary).map((a) => (a === baseline ? { ...a, version: canary.version, weight: pair } : a))
  const what = action === 'rollback' ? `roll back canary v${canary.version} to 0%` : `promote canary v${canary.version} into ${baseline.variant}`
  return { action, rollout: { ...body(rollout), arms }, summary: `${what}\n${describeArms(rollout.arms)}  →  ${describeArms(arms)}` }
}
