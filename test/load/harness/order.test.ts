import { describe, expect, it } from 'vitest'
import { turnOrder } from '../../../load/harness/order.ts'

describe('turnOrder', () => {
  it('keeps the listed order in round 1 and starts one row later each round', () => {
    expect(turnOrder(['a', 'b', 'c'], 1)).toEqual(['a', 'b', 'c'])
    expect(turnOrder(['a', 'b', 'c'], 2)).toEqual(['b', 'c', 'a'])
    expect(turnOrder(['a', 'b', 'c'], 3)).toEqual(['c', 'a', 'b'])
    expect(turnOrder(['a', 'b', 'c'], 4)).toEqual(['a', 'b', 'c'])
  })

  it('gives every row the first turn once over as many rounds as there are rows', () => {
    const rows = ['a', 'b', 'c', 'd', 'e']
    const firsts = [1, 2, 3, 4, 5].map((round) => turnOrder(rows, round)[0])
    expect(new Set(firsts)).toEqual(new Set(rows))
  })

  it('measures every row once per round and leaves its input alone', () => {
    const rows = [1, 2, 3, 4]
    for (const round of [1, 2, 3, 7]) expect([...turnOrder(rows, round)].sort()).toEqual(rows)
    expect(rows).toEqual([1, 2, 3, 4])
    expect(turnOrder([], 3)).toEqual([])
  })
})
