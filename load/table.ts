import type { Figures, Sample, Verdict } from './results.ts'

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
const kilo = (x: number): string => (Number.isFinite(x) ? (x >= 1000 ? `${(x / 1000).toFixed(1)}k` : x.toFixed(0)) : '-')
const ms = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 2 : 1)) : '-')
const batch = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(1)) : '-')

/** One row of the benchmark: a server under one concurrency, measured `samples.length` times. */
export interface MeasuredRow {
  model: string
  label: string
  /** The Node that ran the server; absent for a server that is not Node (FastAPI). */
  node?: string
  connections: number
  samples: readonly Sample[]
  figures: Figures
}

/** C(b): onnxruntime in-process, no server. */
export interface CeilingRow {
  model: string
  node: string
  batch: number
  rowsPerSec: number
}

const MEASUREMENTS_HEADERS = ['model', 'row', 'conn', 'req/s', 'req/s by run', 'rows/s', 'p50 ms', 'p99 ms', 'mean batch', 'CPU µs/req', 'non-2xx/errors']
const MEASUREMENTS_ALIGN: Align[] = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right']

const failures = (samples: readonly Sample[]): string => {
  const sum = (pick: (s: Sample) => number) => samples.reduce((n, s) => n + pick(s), 0)
  const timeouts = sum((s) => s.load.timeouts)
  return `${sum((s) => s.load.non2xx)}/${sum((s) => s.load.errors)}${timeouts > 0 ? ` (${timeouts} timeouts)` : ''}`
}

const measuredRow = ({ model, label, node, connections, samples, figures: f }: MeasuredRow): RuntimeRow => ({
  key: `${model} ${label} ${connections}`,
  node,
  cells: [
    model, label, String(connections), measured(f.reqPerSec, int), samples.map((s) => kilo(s.load.reqPerSec)).join(' '),
    measured(f.rowsPerSec, int), measured(f.p50Ms, ms), measured(f.p99Ms, ms), batch(f.meanBatch), measured(f.cpuUsPerRequest, int), failures(samples),
  ],
})

const ceilingRow = ({ model, node, batch: b, rowsPerSec }: CeilingRow): RuntimeRow => {
  const label = `C(${b}) onnxruntime in-process`
  return { key: `${model} ${label}`, node, cells: [model, label, '-', '-', '-', measured(rowsPerSec, int), '-', '-', String(b), '-', '-'] }
}

/** The one table of measurements, every row from the same run, each runtime's beside the others'. */
export const formatMeasurements = (rows: readonly MeasuredRow[], ceilings: readonly CeilingRow[]): string =>
  formatRuntimeTable(MEASUREMENTS_HEADERS, [...rows.map(measuredRow), ...ceilings.map(ceilingRow)], MEASUREMENTS_ALIGN)

/** Issue 16's targets with PASS/MISS, for each runtime. */
export const formatVerdicts = (perRuntime: ReadonlyArray<{ node: string; verdicts: readonly Verdict[] }>): string =>
  formatRuntimeTable(
    ['target', 'from (medians)', 'measured', 'bound', 'result'],
    perRuntime.flatMap(({ node, verdicts }) =>
      verdicts.map((v) => ({
        key: v.name,
        node,
        cells: [v.name, v.detail, Number.isFinite(v.measured) ? v.measured.toFixed(2) : '-', `${v.comparator} ${v.target.toFixed(2)}`, v.pass ? 'PASS' : 'MISS'],
      })),
    ),
    ['left', 'left', 'right', 'right', 'left'],
  )
