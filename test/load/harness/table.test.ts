import { describe, expect, it } from 'vitest'
import { formatRuntimeTable, measured, type RuntimeRow } from '../../../load/harness/table.ts'

const n = (x: number) => measured(x, String)
const lines = (rows: RuntimeRow[]) =>
  formatRuntimeTable(['row', 'req/s', 'p50', 'note'], rows, ['left', 'right', 'right', 'left']).split('\n').map((l) => l.split(/\s{2,}/))

describe('formatRuntimeTable', () => {
  it('puts a node column second, groups each measurement across runtimes, and divides the first by the others', () => {
    const [header, , ...body] = lines([
      { key: 'a', node: 'v24', cells: ['a', n(200), n(5), 'x'] },
      { key: 'b', node: 'v24', cells: ['b', n(10), n(1), 'y'] },
      { key: 'a', node: 'v20', cells: ['a', n(100), n(4), 'x'] },
      { key: 'b', node: 'v20', cells: ['b', n(40), n(2), 'y'] },
    ])
    expect(header).toEqual(['row', 'node', 'req/s', 'p50', 'note'])
    expect(body).toEqual([
      ['a', 'v24', '200', '5', 'x'],
      ['a', 'v20', '100', '4', 'x'],
      ['', 'v24 ÷ v20', '2.00×', '1.25×'],
      ['b', 'v24', '10', '1', 'y'],
      ['b', 'v20', '40', '2', 'y'],
      ['', 'v24 ÷ v20', '0.25×', '0.50×'],
    ])
  })

  it('adds no ratio row for a row no Node runs, a lone runtime, or a row with nothing to divide', () => {
    const [, , ...body] = lines([
      { key: 'workerd', cells: ['workerd', n(7), n(1), ''] },
      { key: 'once', node: 'v24', cells: ['once', n(3), n(1), 'z'] },
      { key: 'check', node: 'v24', cells: ['check', '1.00', '-', 'PASS'] },
      { key: 'check', node: 'v20', cells: ['check', '0.90', '-', 'MISS'] },
      { key: 'empty', node: 'v24', cells: ['empty', n(0), n(Number.NaN), ''] },
      { key: 'empty', node: 'v20', cells: ['empty', n(0), n(1), ''] },
    ])
    expect(body.map((cells) => cells.slice(0, 2))).toEqual([
      ['workerd', '-'], ['once', 'v24'], ['check', 'v24'], ['check', 'v20'], ['empty', 'v24'], ['empty', 'v20'],
    ])
  })
})
