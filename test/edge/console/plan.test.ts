import { describe, expect, it } from 'vitest'
import { planFor, type ActionName, type Plan } from '../../../console/src/plan.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'

/** The console's actions as rollouts: each one a valid PUT body, as the edge parses it. */

const running: Rollout = rolloutSchema.parse({
  salt: 's',
  arms: [{ variant: 'stable', version: 1, weight: 80 }, { variant: 'canary', version: 2, weight: 20 }],
  pinnable: [3],
  canary: { variant: 'canary', baseline_variant: 'stable', critical_streak: 1 },
})

const planned = (rollout: Rollout, action: ActionName, version?: number): Plan => {
  const plan = planFor(rollout, action, version)
  if (typeof plan === 'string') throw new Error(plan)
  // What the edge would store: the body must parse as a rollout.
  expect(rolloutSchema.safeParse(plan.rollout).success).toBe(true)
  return plan
}

const weights = (plan: Plan) => plan.rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)

describe('the console\'s actions', () => {
  it('promotes as the controller does: the baseline arm takes the canary\'s version and the pair\'s weight', () => {
    const plan = planned(running, 'promote')
    expect(weights(plan)).toEqual(['stable:v2=100'])
    expect(plan.rollout.canary).toBeUndefined()
    expect(plan.rollout.pinnable).toEqual([3])
  })

  it('pauses by ending the controller\'s drive, weights untouched; a paused canary can still be rolled back', () => {
    const paused = planned(running, 'pause')
    expect(weights(paused)).toEqual(['stable:v1=80', 'canary:v2=20'])
    expect(paused.rollout.canary).toBeUndefined()
    const stored = rolloutSchema.parse(paused.rollout)
    expect(planFor(stored, 'pause')).toBe('no canary is running')
    expect(weights(planned(stored, 'rollback'))).toEqual(['stable:v1=100', 'canary:v2=0'])
  })

  it('starts a canary at 1% from the heaviest arm, replacing a rolled-back canary arm', () => {
    const rolledBack = rolloutSchema.parse(planned(running, 'rollback').rollout)
    expect(planFor(rolledBack, 'rollback')).toBe('there is no canary arm with weight')
    const plan = planned(rolledBack, 'start', 3)
    expect(weights(plan)).toEqual(['stable:v1=99', 'canary:v3=1'])
    expect(plan.rollout.canary).toEqual({ variant: 'canary', baseline_variant: 'stable' })
    expect(planFor(running, 'start', 3)).toBe('a canary is already running')
  })
})
