import { describe, expect, it } from 'vitest'
import { pairedRatio } from '../../../../load/bench/edge/workerd-pipeline.ts'

describe('the workerd pipeline ÷ floor judge', () => {
  it('takes the median of per-pair ratios, each batch less the empty call', () => {
    // Pairs (edge, floor) with an empty call of 10 ms: ratios 3, 2, 2.5, 4, 1.5 → median 2.5.
    expect(pairedRatio([40, 30, 35, 50, 25], [20, 20, 20, 20, 20], 10)).toEqual({ pairs: 5, median: 2.5 })
  })

  it('is not moved by a slow spell that lands on both halves of one pair', () => {
    const calm = pairedRatio([40, 40, 40, 40, 40], [20, 20, 20, 20, 20], 10)
    const spell = pairedRatio([40, 40, 310, 40, 40], [20, 20, 110, 20, 20], 10)
    expect(spell.median).toBe(calm.median)
  })

  it('leaves out a pair whose floor took no longer than the empty call, and says how many pairs it judged', () => {
    expect(pairedRatio([40, 40, 40, 40], [20, 10, 5, 20], 10)).toEqual({ pairs: 2, median: 3 })
    expect(pairedRatio([], [], 10).median).toBeNaN()
  })
})
