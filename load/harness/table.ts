type Cell = string
export type Align = 'left' | 'right'

/** Plain-text table: the output is read in a terminal and pasted into issues. */
export const formatTable = (headers: readonly Cell[], rows: readonly Cell[][], align: readonly Align[]): string => {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)))
  const line = (cells: readonly Cell[]) =>
    cells.map((c, i) => (align[i] === 'right' ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd()
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

/** A printed number that keeps its value, so the same row on two runtimes can be divided. */
export interface Measured {
  text: string
  value: number
}

export const measured = (value: number, format: (x: number) => string): Measured => ({ text: format(value), value })

export interface RuntimeRow {
  /** Rows with the same key are one measurement on different runtimes. */
  key: string
  /** The version of the Node that ran the row; absent where none does (workerd). */
  node?: string
  cells: ReadonlyArray<Cell | Measured>
}

const text = (c: Cell | Measured): Cell => (typeof c === 'string' ? c : c.text)

const ratio = (a: Cell | Measured, b: Cell | Measured): Cell =>
  typeof a !== 'string' && typeof b !== 'string' && Number.isFinite(a.value / b.value) ? `${(a.value / b.value).toFixed(2)}×` : ''

/**
 * formatTable with a `node` column after the first, the rows of one measurement side by side (in
 * the order keys first appear), and after them an "A ÷ B" row dividing each measured cell of the
 * first runtime's row by another runtime's: ratios within one run, the comparison that holds on
 * a shared machine.
 */
export const formatRuntimeTable = (headers: readonly Cell[], rows: readonly RuntimeRow[], align: readonly Align[]): string => {
  const groups = new Map<string, RuntimeRow[]>()
  for (const row of rows) groups.set(row.key, [...(groups.get(row.key) ?? []), row])
  const withNode = <T>(node: T, cells: readonly T[]): T[] => [cells[0], node, ...cells.slice(1)]
  const lines = [...groups.values()].flatMap(([first, ...others]) => {
    const ratios = others.flatMap((r) => {
      if (first.node === undefined || r.node === undefined) return []
      const cells = first.cells.map((c, i) => ratio(c, r.cells[i]))
      return cells.some((c) => c !== '') ? [withNode(`${first.node} ÷ ${r.node}`, cells)] : []
    })
    return [...[first, ...others].map((r) => withNode(r.node ?? '-', r.cells.map(text))), ...ratios]
  })
  return formatTable(withNode('node', headers), lines, withNode<Align>('left', align))
}
