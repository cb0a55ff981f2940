import { describe, expect, it } from 'vitest'
import { controllerConfig } from '../../../edge/rollout/controller-config.ts'
import { decide } from '../../../edge/rollout/policy.ts'
import { nextRollout } from '../../../edge/rollout/transition.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'
import { IDS, armsOf, expectSharesOfWeights, expectUsersNear, moves } from './movement.ts'
import { T0, window } from './support.ts'

// No dwell and one clean window: every healthy tick steps.
const config = controllerConfig({ dwellMinutes: 0, cleanWindows: 1 })

/** The rollout after one controller tick on a healthy canary (version 3) or one emitting NaN. */
const tick = (rollout: Rollout, { nan = false } = {}): Rollout => {
  const { decision, streaks } = decide({ rollout, stable: window(2), canary: window(3, { nan_outputs: nan ? 1 : 0 }), config, now: T0 })
  return nextRollout(rollout, decision, streaks, T0)!
}

const weightOf = (rollout: Rollout, variant: string) => rollout.arms.find((a) => a.variant === variant)?.weight

/** Stable and an unrelated A/B arm at 49/50, a canary taking its weight from stable at 1. */
const start = rolloutSchema.parse({
  salt: 'exp',
  arms: [{ variant: 'stable', version: 2, weight: 49 }, { variant: 'b', version: 1, weight: 50 }, { variant: 'canary', version: 3, weight: 1 }],
  canary: { variant: 'canary', baseline_variant: 'stable', step_started_at: T0 },
})

/** The canary stepped from 1 to `weight` by healthy ticks. */
const steppedTo = (weight: number): Rollout => {
  let rollout = start
  while (weightOf(rollout, 'canary')! < weight) rollout = tick(rollout)
  expect(weightOf(rollout, 'canary')).toBe(weight)
  return rollout
}

describe('users moved by the controller over 100,000 ids', () => {
  it('steps 1 → 2.5 → 10 → 25 moving stable users into the canary only: b keeps every user', () => {
    let rollout = start
    let before = armsOf(rollout)
    expectSharesOfWeights(rollout, before)
    for (const weight of [2.5, 10, 25]) {
      const next = tick(rollout)
      expect(next.arms.map((a) => [a.variant, a.weight])).toEqual([['stable', 50 - weight], ['b', 50], ['canary', weight]])
      const after = armsOf(next)
      const moved = moves(before, after)
      expect(Object.keys(moved)).toEqual(['stable→canary'])
      expectUsersNear(moved['stable→canary'], weight - weightOf(rollout, 'canary')!)
      expectSharesOfWeights(next, after)
      rollout = next
      before = after
    }
  })

  it('rolls back by returning exactly the canary\'s users to stable', () => {
    const running = steppedTo(10)
    const before = armsOf(running)
    const rolledBack = tick(running, { nan: true })
    expect(rolledBack.arms.map((a) => [a.variant, a.weight])).toEqual([['stable', 50], ['b', 50], ['canary', 0]])
    expect(moves(before, armsOf(rolledBack))).toEqual({ 'canary→stable': before.filter((a) => a === 'canary').length })
  })

  it('promotes without moving anyone between arms: only stable\'s own users change version', () => {
    const running = steppedTo(25)
    const promoted = tick(running)
    expect(promoted.arms.map((a) => [a.variant, a.version, a.weight])).toEqual([['stable', 3, 50], ['b', 1, 50]])
    const before = armsOf(running)
    const after = armsOf(promoted)
    expect(moves(before, after)).toEqual({ 'canary→stable': before.filter((a) => a === 'canary').length })
    const versionOf = (rollout: Rollout, variant: string) => rollout.arms.find((a) => a.variant === variant)!.version
    const changedVersion = IDS.filter((_, i) => versionOf(running, before[i]) !== versionOf(promoted, after[i]))
    expect(changedVersion.length).toBe(before.filter((a) => a === 'stable').length)
  })
})
