import { formatRuntimeTable, measured, type Align, type RuntimeRow } from '../../harness/table.ts'
import type { Figures, Sample } from './results.ts'

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

