import { describe, expect, it } from 'vitest'
import { binIndex } from '../../../../backend/monitor/drift/baseline-format.ts'

describe('binIndex', () => {
  const edges = [1, 2, 5]
  it('counts the edges at or below a value, so a value on an edge goes to the upper bin', () => {
    expect([-1, 0.999, 1, 1.5, 2, 4.9, 5, 100].map((v) => binIndex(edges, v))).toEqual([0, 0, 1, 1, 2, 2, 3, 3])
  })
  it('puts everything in bin 0 when there are no edges', () => {
    expect(binIndex([], 42)).toBe(0)
  })
})
