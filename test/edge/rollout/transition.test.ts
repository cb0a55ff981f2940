import { describe, expect, it } from 'vitest'
import { controllerConfig } from '../../../edge/rollout/controller-config.ts'
import { decide } from '../../../edge/rollout/policy.ts'
import { isRepeat, nextRollout } from '../../../edge/rollout/transition.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'
import { MINUTE, T0, canaryRollout, window } from './support.ts'

const NOW = T0 + 10 * MINUTE
const decided = (rollout: Rollout, canary = window(3)) => decide({ rollout, stable: window(2), canary, config: controllerConfig(), now: NOW })
const after = (rollout: Rollout, canary = window(3)) => {
  const { decision, streaks } = decided(rollout, canary)
  return nextRollout(rollout, decision, streaks, NOW)
}

describe('nextRollout', () => {
  it('steps the canary against its baseline and starts the step afresh', () => {
    const next = after(canaryRollout(1, { clean_streak: 2, critical_streak: 0, last_reason: 'dwelling at 1% for 10 min', seed: 'started-with' }))!
    expect(next.arms).toEqual([{ variant: 'stable', version: 2, weight: 95 }, { variant: 'canary', version: 3, weight: 5 }])
    expect(next.canary).toEqual({ variant: 'canary', baseline_variant: 'stable', step_started_at: NOW, critical_streak: 0, clean_streak: 0, seed: 'started-with' })
    expect(rolloutSchema.parse(next)).toEqual(next)
  })

  it('rolls back to 0: the canary arm stays at weight 0 and the canary ends', () => {
    const next = after(canaryRollout(20), window(3, { nan_outputs: 4 }))!
    expect(next.arms).toEqual([{ variant: 'stable', version: 2, weight: 100 }, { variant: 'canary', version: 3, weight: 0 }])
    expect(next.canary).toBeUndefined()
    expect(rolloutSchema.parse(next)).toEqual(next)
  })

  it('promotes: the baseline arm serves the canary\'s version at both arms\' weight, the canary arm is gone', () => {
    const next = after({ ...canaryRollout(50, { clean_streak: 2 }), pinnable: [1] })!
    expect(next).toEqual({ salt: 'exp', arms: [{ variant: 'stable', version: 3, weight: 100 }], pinnable: [1], layout: '0'.repeat(10_000) })
    expect(rolloutSchema.parse(next)).toEqual(next)
  })

  it('writes a hold\'s new reason and streaks, and nothing for the same hold again', () => {
    const rollout = canaryRollout(1)
    const first = after(rollout, window(3, { rows: 10 }))!
    expect(first.canary).toMatchObject({ last_reason: 'waiting for data: canary below 1000 rows', step_started_at: T0 })
    expect(first.arms).toEqual(rollout.arms)
    expect(isRepeat(first, decided(first, window(3, { rows: 10 })).decision)).toBe(true)
    expect(after(first, window(3, { rows: 10 }))).toBeUndefined()
  })

  it('writes a repeated hold whose streaks moved, without it counting as news', () => {
    const rollout = canaryRollout(1, { last_reason: 'dwelling at 1% for 10 min', clean_streak: 1 })
    const { decision, streaks } = decide({ rollout, stable: window(2), canary: window(3), config: controllerConfig(), now: T0 + MINUTE })
    expect(isRepeat(rollout, decision)).toBe(true)
    expect(nextRollout(rollout, decision, streaks, T0 + MINUTE)?.canary).toMatchObject({ clean_streak: 2 })
  })
})
