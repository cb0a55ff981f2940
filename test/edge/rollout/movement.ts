import { expect } from 'vitest'
import { assignArm, type Rollout } from '../../../edge/rollout/rollout.ts'

/** The synthetic users every movement property is checked over. */
export const IDS: readonly string[] = Array.from({ length: 100_000 }, (_, i) => `user-${i}`)

/** Each user's arm under a model's rollout, in `IDS` order. */
export const armsOf = (rollout: Rollout, model = 'credit-risk'): string[] => IDS.map((id) => assignArm(rollout, model, id).variant)

/** Users who changed arm, counted per `from→to`; an empty object when nobody moved. */
export const moves = (before: readonly string[], after: readonly string[]): Record<string, number> => {
  const moved: Record<string, number> = {}
  before.forEach((from, i) => {
    if (after[i] !== from) moved[`${from}→${after[i]}`] = (moved[`${from}→${after[i]}`] ?? 0) + 1
  })
  return moved
}

/** Five binomial standard deviations of a count of users who each fall in a share `percent` of the buckets. */
const tolerance = (percent: number) => 5 * Math.sqrt(IDS.length * (percent / 100) * (1 - percent / 100))

/** Asserts that `count` users is what `percent` of all users should be, within sampling noise. */
export const expectUsersNear = (count: number, percent: number) => {
  const expected = (IDS.length * percent) / 100
  expect(Math.abs(count - expected), `${count} users where ${percent}% is ${expected}`).toBeLessThanOrEqual(tolerance(percent))
}

/** Asserts every arm holds its weight's share of the users, within sampling noise. */
export const expectSharesOfWeights = (rollout: Rollout, arms: readonly string[]) => {
  for (const arm of rollout.arms) expectUsersNear(arms.filter((a) => a === arm.variant).length, arm.weight)
}
