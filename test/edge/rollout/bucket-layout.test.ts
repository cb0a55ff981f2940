import { describe, expect, it } from 'vitest'
import { BUCKETS } from '../../../shared/sticky-hash.ts'
import { ownersOf, withLayout } from '../../../edge/rollout/bucket-layout.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'

const arm = (variant: string, weight: number, version = 1) => ({ variant, version, weight })
const parse = (rollout: unknown): Rollout => rolloutSchema.parse(rollout)

/** Buckets that changed arm, per `from→to` (variant names), counted over every bucket. */
const bucketMoves = (before: Rollout, after: Rollout): Record<string, number> => {
  const [from, to] = [ownersOf(before), ownersOf(after)]
  const moved: Record<string, number> = {}
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    const key = `${before.arms[from[bucket]].variant}→${after.arms[to[bucket]].variant}`
    if (before.arms[from[bucket]].variant !== after.arms[to[bucket]].variant) moved[key] = (moved[key] ?? 0) + 1
  }
  return moved
}

describe('withLayout', () => {
  it('gives a removed arm\'s buckets to the gaining arms before it takes any from a losing one', () => {
    const before = withLayout(parse({ salt: 'exp', arms: [arm('stable', 50), arm('b', 30), arm('c', 20)] }), undefined)
    // c goes (20%), stable gives 10%; b gains 5% and d 25%: the 20% of c first, then stable's.
    const after = withLayout(parse({ salt: 'exp', arms: [arm('stable', 40), arm('b', 35), arm('d', 25)] }), before)
    expect(bucketMoves(before, after)).toEqual({ 'c→b': 500, 'c→d': 1_500, 'stable→d': 1_000 })
  })

  it('keeps a running canary\'s seed, and gives a new one to a canary restated with a new version', () => {
    const canary = { variant: 'canary', baseline_variant: 'stable', seed: 'seed-of-version-3' }
    const running = withLayout(parse({ salt: 'exp', arms: [arm('stable', 90, 2), arm('canary', 10, 3)], canary }), undefined)
    const { seed: _seed, ...unseeded } = canary
    const continued = withLayout(parse({ salt: 'exp', arms: [arm('stable', 80, 2), arm('canary', 20, 3)], canary: unseeded }), running)
    expect(continued.canary?.seed).toBe('seed-of-version-3')
    const restated = withLayout(parse({ salt: 'exp', arms: [arm('stable', 80, 2), arm('canary', 20, 4)], canary: unseeded }), running)
    expect(restated.canary?.seed).toMatch(/^[0-9a-f]{16}$/)
  })
})
