import { describe, expect, it } from 'vitest'
import { withLayout } from '../../../edge/rollout/bucket-layout.ts'
import { rolloutSchema, type Rollout } from '../../../edge/rollout/rollout.ts'
import { IDS, armsOf, expectUsersNear, moves } from './movement.ts'

const parse = (rollout: unknown): Rollout => rolloutSchema.parse(rollout)
const stable = (weight: number, version = 2) => ({ variant: 'stable', version, weight })
const b = (weight: number) => ({ variant: 'b', version: 1, weight })
const canary = (weight: number, version: number) => ({ variant: 'canary', version, weight })
const running = { variant: 'canary', baseline_variant: 'stable' }

/** Users in `variant` under both assignments. */
const overlap = (first: readonly string[], second: readonly string[], variant: string) => first.filter((a, i) => a === variant && second[i] === variant).length
const count = (arms: readonly string[], variant: string) => arms.filter((a) => a === variant).length

/**
 * Asserts that two groups drawn from a pool of users share as many as independent draws would:
 * |A ∩ B| ≈ |A|·|B| / |pool|. Users sit in buckets of about ten, so the bound allows for
 * sampling whole buckets (about five of its standard deviations).
 */
const expectIndependent = (shared: number, a: number, bGroup: number, pool: number) => {
  const expected = (a * bGroup) / pool
  expect(Math.abs(shared - expected), `${shared} shared where independence gives ${expected.toFixed(0)}`).toBeLessThanOrEqual(0.3 * expected)
}

describe('canary membership over 100,000 ids', () => {
  it('is independent across models that use the same salt and layout', () => {
    const rollout = withLayout(parse({ salt: 'exp', arms: [stable(90), canary(10, 3)], canary: running }), undefined)
    const first = armsOf(rollout, 'credit-risk')
    const second = armsOf(rollout, 'fraud')
    for (const arms of [first, second]) expectUsersNear(count(arms, 'canary'), 10)
    expectIndependent(overlap(first, second, 'canary'), count(first, 'canary'), count(second, 'canary'), IDS.length)
  })

  it('is independent across successive canaries of one model, and the A/B arm keeps every user', () => {
    const abOnly = withLayout(parse({ salt: 'exp', arms: [stable(50), b(50)] }), undefined)
    const firstCanary = withLayout(parse({ salt: 'exp', arms: [stable(40), b(50), canary(10, 3)], canary: running }), abOnly)
    const promoted = withLayout(parse({ salt: 'exp', arms: [stable(50, 3), b(50)] }), firstCanary)
    const secondCanary = withLayout(parse({ salt: 'exp', arms: [stable(40, 3), b(50), canary(10, 4)], canary: running }), promoted)
    const [before, first, after, second] = [abOnly, firstCanary, promoted, secondCanary].map((r) => armsOf(r))
    expect(Object.keys(moves(before, first))).toEqual(['stable→canary'])
    expect(Object.keys(moves(first, after))).toEqual(['canary→stable'])
    expect(Object.keys(moves(after, second))).toEqual(['stable→canary'])
    // Both canaries drew from the users stable held after the first promotion.
    expectIndependent(overlap(first, second, 'canary'), count(first, 'canary'), count(second, 'canary'), count(after, 'stable'))
    expect(firstCanary.canary?.seed).not.toBe(secondCanary.canary?.seed)
  })

  it('keeps a running canary\'s seed when a PUT restates it, so its steps take from the same order', () => {
    const started = withLayout(parse({ salt: 'exp', arms: [stable(99), canary(1, 3)], canary: running }), undefined)
    expect(started.canary?.seed).toMatch(/^[0-9a-f]{16}$/)
    const stepped = withLayout(parse({ salt: 'exp', arms: [stable(95), canary(5, 3)], canary: running }), started)
    expect(stepped.canary?.seed).toBe(started.canary?.seed)
  })
})
