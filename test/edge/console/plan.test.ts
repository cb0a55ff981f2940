import { describe, expect, it } from 'vitest'
import { planFor, type ActionName, type Plan, type RolloutPut } from '../../../console/src/plan.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'

/** The console's actions as rollouts: each one a valid PUT body, as the edge parses it. */

const running: Rollout = rolloutSchema.parse({
  salt: 's',
  arms: [{ variant: 'stable', version: 1, weight: 80 }, { variant: 'canary', version: 2, weight: 20 }],
  pinnable: [3],
  canary: { variant: 'canary', baseline_variant: 'stable', critical_streak: 1 },
})

type PutPlan = Plan & { rollout: RolloutPut }

const planned = (rollout: Rollout, action: ActionName, version?: number): PutPlan => {
  const plan = planFor(rollout, action, version)
  if (typeof plan === 'string') throw new Error(plan)
  if (!plan.rollout) throw new Error(`${action} sends no rollout`)
  // What the edge would store: the body must parse as a rollout.
  expect(rolloutSchema.safeParse(plan.rollout).success).toBe(true)
  return { ...plan, rollout: plan.rollout }
}

const weights = (plan: PutPlan) => plan.rollout.arms.map((a) => `${a.variant}:v${a.version}=${a.weight}`)

describe('the console\'s actions', () => {
  it('promotes as the controller does: the baseline arm takes the canary\'s version and the pair\'s weight', () => {
    const plan = planned(running, 'promote')
    expect(weights(plan)).toEqual(['stable:v2=100'])
    expect(plan.rollout.canary).toBeUndefined()
    expect(plan.rollout.pinnable).toEqual([3])
  })

  it('pauses and resumes with their own requests, no rollout replaced (the canary is kept); a paused canary can still be rolled back', () => {
    const pause = planFor(running, 'pause')
    expect(pause).toMatchObject({ action: 'pause' })
    expect(pause).not.toHaveProperty('rollout')
    expect(planFor(running, 'resume')).toBe('no canary is paused')
    const paused = rolloutSchema.parse({ ...running, canary: { ...running.canary, paused_at: 1_000 } })
    expect(planFor(paused, 'pause')).toBe('the canary is already paused')
    const resume = planFor(paused, 'resume')
    expect(resume).toMatchObject({ action: 'resume' })
    expect(resume).not.toHaveProperty('rollout')
    expect(weights(planned(paused, 'rollback'))).toEqual(['stable:v1=100', 'canary:v2=0'])
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
