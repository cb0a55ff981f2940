import type { LoadResult } from './autocannon.ts'
import { checksFor, rowsPerSec, type Check, type ModelResults } from './results.ts'

type Cell = string
type Align = 'left' | 'right'

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

const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-')
const ms = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 2 : 1)) : '-')
const batch = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(1)) : '-')
const failures = (l: LoadResult): string => `${l.non2xx}/${l.errors}${l.timeouts > 0 ? ` (${l.timeouts} timeouts)` : ''}`

const MEASUREMENTS_HEADERS = ['model', 'row', 'req/s', 'rows/s', 'p50 ms', 'p99 ms', 'mean batch', 'CPU µs/req', 'non-2xx/errors']
const MEASUREMENTS_ALIGN: Align[] = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right']

const loadRow = (r: ModelResults, label: string, load: LoadResult, meanBatch: number): RuntimeRow => ({
  key: `${r.model} ${label}`,
  node: r.node,
  cells: [
    r.model, label, measured(load.reqPerSec, int), measured(rowsPerSec(load, r.rowsPerRequest), int), measured(load.p50Ms, ms), measured(load.p99Ms, ms),
    batch(meanBatch), measured(load.serverCpuUsPerRequest ?? Number.NaN, int), failures(load),
  ],
})

const ceilingRow = (r: ModelResults, b: number, rowsPerSecond: number): RuntimeRow => {
  const label = `C(${b}) onnxruntime in-process`
  return { key: `${r.model} ${label}`, node: r.node, cells: [r.model, label, '-', measured(rowsPerSecond, int), '-', '-', String(b), '-', '-'] }
}

/** The one table of measurements: every row from the same run, each runtime's beside the others'. */
export const formatMeasurements = (results: readonly ModelResults[]): string =>
  formatRuntimeTable(
    MEASUREMENTS_HEADERS,
    results.flatMap((r) => [
      ...[...r.ceilings].sort(([x], [y]) => x - y).map(([b, rowsPerSecond]) => ceilingRow(r, b, rowsPerSecond)),
      loadRow(r, 'H http ceiling (no model)', r.httpCeiling, 1),
      loadRow(r, 'server BATCHING=off', r.unbatched.load, r.unbatched.meanBatch),
      loadRow(r, 'server BATCHING=on', r.batched.load, r.batched.meanBatch),
      ...(r.unmonitored ? [loadRow(r, 'server BATCHING=on DRIFT_MONITORING=off', r.unmonitored.load, r.unmonitored.meanBatch)] : []),
    ]),
    MEASUREMENTS_ALIGN,
  )

const checkRow = (node: string, c: Check): RuntimeRow => ({
  key: `${c.model} ${c.name}`,
  node,
  cells: [c.model, c.name, c.detail, c.measured.toFixed(2), `≥ ${c.target.toFixed(2)}`, c.pass ? 'PASS' : 'MISS'],
})

/** The ratios against the issue's targets, for each runtime. */
export const formatChecks = (results: readonly ModelResults[]): string =>
  formatRuntimeTable(
    ['model', 'ratio', 'from', 'measured', 'target', 'result'],
    results.flatMap((r) => checksFor(r).map((c) => checkRow(r.node, c))),
    ['left', 'left', 'left', 'right', 'right', 'left'],
  )
