import { describe, expect, it } from 'vitest'
import { createRandom } from '../../../tools/training/random.ts'

describe('createRandom', () => {
  it('repeats for a seed and differs between seeds', () => {
    const draw = (seed: number) => Array.from({ length: 5 }, createRandom(seed).next)
    expect(draw(1)).toEqual(draw(1))
    expect(draw(1)).not.toEqual(draw(2))
  })

  it('draws normals with the requested mean and spread', () => {
    const random = createRandom(3)
    const xs = Array.from({ length: 50_000 }, () => random.normal(10, 2))
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length
    const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length)
    expect(mean).toBeCloseTo(10, 1)
    expect(sd).toBeCloseTo(2, 1)
  })

  it('keeps int() inside both bounds and reaches them', () => {
    const random = createRandom(4)
    const seen = new Set(Array.from({ length: 1_000 }, () => random.int(3, 6)))
    expect([...seen].sort()).toEqual([3, 4, 5, 6])
  })

  it('draws Poisson counts with the requested mean and choices by weight', () => {
    const random = createRandom(5)
    const counts = Array.from({ length: 20_000 }, () => random.poisson(2.5))
    expect(counts.reduce((a, b) => a + b, 0) / counts.length).toBeCloseTo(2.5, 1)
    const picks = Array.from({ length: 20_000 }, () => random.choice(['a', 'b'], [1, 3]))
    expect(picks.filter((p) => p === 'b').length / picks.length).toBeCloseTo(0.75, 1)
  })

  it('shuffles into a permutation', () => {
    const items = Array.from({ length: 50 }, (_, i) => i)
    const shuffled = createRandom(6).shuffle([...items])
    expect(shuffled).not.toEqual(items)
    expect([...shuffled].sort((a, b) => a - b)).toEqual(items)
  })
})
