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

const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-')
const ms = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(x < 10 ? 2 : 1)) : '-')
const batch = (x: number): string => (Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(1)) : '-')
const failures = (l: LoadResult): string => `${l.non2xx}/${l.errors}${l.timeouts > 0 ? ` (${l.timeouts} timeouts)` : ''}`

const MEASUREMENTS_HEADERS = ['model', 'row', 'req/s', 'rows/s', 'p50 ms', 'p99 ms', 'mean batch', 'CPU µs/req', 'non-2xx/errors']
const MEASUREMENTS_ALIGN: Align[] = ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right']

const loadRow = (model: string, label: string, load: LoadResult, rowsPerRequest: number, meanBatch: number): Cell[] => [
  model, label, int(load.reqPerSec), int(rowsPerSec(load, rowsPerRequest)), ms(load.p50Ms), ms(load.p99Ms), batch(meanBatch),
  int(load.serverCpuUsPerRequest ?? Number.NaN), failures(load),
]

const ceilingRow = (model: string, b: number, rowsPerSecond: number): Cell[] =>
  [model, `C(${b}) onnxruntime in-process`, '-', int(rowsPerSecond), '-', '-', String(b), '-', '-']

/** The one table of measurements: every row from the same run. */
export const formatMeasurements = (results: readonly ModelResults[]): string =>
  formatTable(
    MEASUREMENTS_HEADERS,
    results.flatMap((r) => [
      ceilingRow(r.model, 1, r.c1),
      ceilingRow(r.model, r.b, r.cb),
      loadRow(r.model, 'H http ceiling (no model)', r.httpCeiling, r.rowsPerRequest, 1),
      loadRow(r.model, 'server BATCHING=off', r.unbatched.load, r.rowsPerRequest, r.unbatched.meanBatch),
      loadRow(r.model, 'server BATCHING=on', r.batched.load, r.rowsPerRequest, r.batched.meanBatch),
      ...(r.unmonitored ? [loadRow(r.model, 'server BATCHING=on DRIFT_MONITORING=off', r.unmonitored.load, r.rowsPerRequest, r.unmonitored.meanBatch)] : []),
    ]),
    MEASUREMENTS_ALIGN,
  )

const checkRow = (c: Check): Cell[] => [c.model, c.name, c.detail, c.measured.toFixed(2), `≥ ${c.target.toFixed(2)}`, c.pass ? 'PASS' : 'MISS']

/** The ratios against the issue's targets. */
export const formatChecks = (results: readonly ModelResults[]): string =>
  formatTable(
    ['model', 'ratio', 'from', 'measured', 'target', 'result'],
    results.flatMap(checksFor).map(checkRow),
    ['left', 'left', 'left', 'right', 'right', 'left'],
  )
