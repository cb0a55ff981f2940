import { describe, expect, it } from 'vitest'
import { assignArm, canaryArms, inShadow, pinnable, rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'

const rollout: Rollout = rolloutSchema.parse({
  salt: 'credit-risk-exp',
  arms: [
    { variant: 'stable', version: 2, weight: 70 },
    { variant: 'challenger', version: 3, weight: 25 },
    { variant: 'canary', version: 4, weight: 5 },
  ],
  pinnable: [1],
  shadow: { version: 5, percent: 10 },
})

describe('sticky arm assignment', () => {
  it('puts 10,000 synthetic users into arms within ±1.5 points of the weights, each always in the same arm', () => {
    const counts: Record<string, number> = {}
    for (let i = 0; i < 10_000; i++) {
      const first = assignArm(rollout, 'credit-risk', `user-${i}`)
      for (let again = 0; again < 3; again++) expect(assignArm(rollout, 'credit-risk', `user-${i}`)).toEqual(first)
      counts[first.variant] = (counts[first.variant] ?? 0) + 1
    }
    expect(Math.abs(counts.stable / 100 - 70)).toBeLessThanOrEqual(1.5)
    expect(Math.abs(counts.challenger / 100 - 25)).toBeLessThanOrEqual(1.5)
    expect(Math.abs(counts.canary / 100 - 5)).toBeLessThanOrEqual(1.5)
  })

  it('moves only the users a weight change must move when the canary grows', () => {
    const grown = rolloutSchema.parse({ ...rollout, arms: [{ variant: 'stable', version: 2, weight: 50 }, { variant: 'challenger', version: 3, weight: 25 }, { variant: 'canary', version: 4, weight: 25 }] })
    let movedToCanaryFromElsewhere = 0
    let leftCanary = 0
    for (let i = 0; i < 10_000; i++) {
      const before = assignArm(rollout, 'credit-risk', `u${i}`).variant
      const after = assignArm(grown, 'credit-risk', `u${i}`).variant
      if (before === 'canary' && after !== 'canary') leftCanary++
      if (before !== 'canary' && after === 'canary') movedToCanaryFromElsewhere++
    }
    expect(leftCanary).toBe(0)
    expect(movedToCanaryFromElsewhere).toBeGreaterThan(1_500)
  })

  it('gives a zero-weight arm nobody', () => {
    const off = rolloutSchema.parse({ salt: 's', arms: [{ variant: 'stable', version: 1, weight: 100 }, { variant: 'canary', version: 2, weight: 0 }] })
    for (let i = 0; i < 2_000; i++) expect(assignArm(off, 'credit-risk', `u${i}`).variant).toBe('stable')
  })

  it('allows pins to listed versions and every arm version', () => {
    expect([...pinnable(rollout)].sort()).toEqual([1, 2, 3, 4])
  })

  it('sends about the shadow percentage to the shadow version, stably', () => {
    let shadowed = 0
    for (let i = 0; i < 10_000; i++) {
      const s = inShadow(rollout, 'credit-risk', `u${i}`)
      expect(inShadow(rollout, 'credit-risk', `u${i}`)).toBe(s)
      if (s) shadowed++
    }
    expect(Math.abs(shadowed / 100 - 10)).toBeLessThanOrEqual(1.5)
  })

  it('refuses weights that do not sum to 100, duplicate variants and unknown fields', () => {
    expect(rolloutSchema.safeParse({ salt: 's', arms: [{ variant: 'a', version: 1, weight: 60 }] }).error?.issues[0].message).toMatch(/sum to 60/)
    expect(rolloutSchema.safeParse({ salt: 's', arms: [{ variant: 'a', version: 1, weight: 50 }, { variant: 'a', version: 2, weight: 50 }] }).success).toBe(false)
    expect(rolloutSchema.safeParse({ salt: 's', arms: [{ variant: 'a', version: 1, weight: 100 }], extra: 1 }).success).toBe(false)
  })
})

describe('canary in a rollout', () => {
  const arms = [{ variant: 'stable', version: 2, weight: 99 }, { variant: 'canary', version: 3, weight: 1 }]
  const issues = (canary: Record<string, unknown>, withArms: unknown = arms) =>
    rolloutSchema.safeParse({ salt: 's', arms: withArms, canary }).error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)

  it('starts a canary from just its arms, the step starting at parse time with empty streaks', () => {
    const before = Date.now()
    const parsed = rolloutSchema.parse({ salt: 's', arms, canary: { variant: 'canary', baseline_variant: 'stable' } })
    expect(parsed.canary).toMatchObject({ variant: 'canary', baseline_variant: 'stable', critical_streak: 0, clean_streak: 0 })
    expect(parsed.canary!.step_started_at).toBeGreaterThanOrEqual(before)
    expect(canaryArms(parsed)).toMatchObject({ canary: arms[1], baseline: arms[0] })
    expect(canaryArms(rolloutSchema.parse({ salt: 's', arms }))).toBeUndefined()
  })

  it('refuses a canary naming unknown, identical or same-version arms, or a baseline without traffic', () => {
    expect(issues({ variant: 'nope', baseline_variant: 'stable' })).toEqual(['canary.variant: no arm is named "nope"'])
    expect(issues({ variant: 'canary', baseline_variant: 'canary' })).toEqual(['canary: the canary and its baseline must be different arms'])
    expect(issues({ variant: 'canary', baseline_variant: 'stable' }, [{ variant: 'stable', version: 2, weight: 99 }, { variant: 'canary', version: 2, weight: 1 }]))
      .toEqual(['canary: the canary and its baseline both serve version 2'])
    expect(issues({ variant: 'canary', baseline_variant: 'stable' }, [{ variant: 'stable', version: 2, weight: 0 }, { variant: 'canary', version: 3, weight: 100 }]))
      .toEqual(['canary.baseline_variant: the baseline arm needs a weight above 0 to compare the canary against'])
    expect(issues({ variant: 'canary', baseline_variant: 'stable', critical_streak: -1 })?.[0]).toMatch(/^canary.critical_streak/)
  })
})
