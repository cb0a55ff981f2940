import type { LoadResult } from '../../harness/autocannon.ts'

/** One measured run of one row: the load generator's figures, the server's CPU and its batches. */
export interface Sample {
  load: LoadResult
  /** The server process's CPU time (all threads) over the run ÷ completed requests. */
  cpuUsPerRequest: number
  /** Mean rows per executed batch; NaN where the server does not say. */
  meanBatch: number
}

/** A row's runs reduced to their medians: what the table prints and the verdicts judge. */
export interface Figures {
  reqPerSec: number
  rowsPerSec: number
  p50Ms: number
  p99Ms: number
  cpuUsPerRequest: number
  meanBatch: number
}

/** The median of the finite values; NaN when there are none. */
export const median = (values: readonly number[]): number => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return Number.NaN
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Rows answered with 2xx per second: the mean req/s scaled by the share that succeeded. */
export const rowsPerSec = (load: LoadResult, rowsPerRequest: number): number =>
  load.completed > 0 ? load.reqPerSec * rowsPerRequest * (load.ok / load.completed) : 0

export const summarize = (samples: readonly Sample[], rowsPerRequest: number): Figures => ({
  reqPerSec: median(samples.map((s) => s.load.reqPerSec)),
  rowsPerSec: median(samples.map((s) => rowsPerSec(s.load, rowsPerRequest))),
  p50Ms: median(samples.map((s) => s.load.p50Ms)),
  p99Ms: median(samples.map((s) => s.load.p99Ms)),
  cpuUsPerRequest: median(samples.map((s) => s.cpuUsPerRequest)),
  meanBatch: median(samples.map((s) => s.meanBatch)),
})

/** The rows issue 16's targets compare, each the medians of its runs; undefined where not measured. */
export interface VerdictInputs {
  /** Credit-risk, one row per request, at the benchmark's main concurrency. */
  tiny: {
    peerBatcher?: Figures
    peerPerRequest?: Figures
    backendOn?: Figures
    backendOff?: Figures
    backendDriftOff?: Figures
  }
  computeBound: { backend?: Figures; peerBatcher?: Figures }
  lowLoad: { connections: number; backend?: Figures; peerPerRequest?: Figures }
  highLoad: ReadonlyArray<{ connections: number; idle?: Figures; delay?: Figures }>
}

export interface Verdict {
  name: string
  /** The two figures divided, for the reader. */
  detail: string
  measured: number
  comparator: '≤' | '≥'
  target: number
  pass: boolean
}

type Pick = (f: Figures) => number

const CPU: Pick = (f) => f.cpuUsPerRequest
const REQ: Pick = (f) => f.reqPerSec
const ROWS: Pick = (f) => f.rowsPerSec
const P50: Pick = (f) => f.p50Ms

const short = (x: number): string => (Math.abs(x) >= 1000 ? `${(x / 1000).toFixed(1)}k` : x >= 10 ? x.toFixed(0) : x.toFixed(2))

/** `a ÷ b` of one figure against a bound; a missing side is a MISS, never a PASS. */
const ratio = (name: string, pick: Pick, unit: string, a: Figures | undefined, b: Figures | undefined, comparator: '≤' | '≥', target: number): Verdict => {
  const [x, y] = [a ? pick(a) : Number.NaN, b ? pick(b) : Number.NaN]
  const measured = x / y
  const within = comparator === '≤' ? measured <= target : measured >= target
  const detail = a && b ? `${short(x)} ÷ ${short(y)} ${unit}` : 'not measured'
  return { name, detail, measured, comparator, target, pass: Number.isFinite(measured) && within }
}

/** Issue 16's targets, judged on one run's medians. */
export const verdictsFor = ({ tiny, computeBound, lowLoad, highLoad }: VerdictInputs): Verdict[] => [
  ratio('tiny, batching on: CPU/req backend ÷ peer batcher', CPU, 'µs', tiny.backendOn, tiny.peerBatcher, '≤', 1.25),
  ratio('tiny, batching off: CPU/req backend ÷ per-request peer', CPU, 'µs', tiny.backendOff, tiny.peerPerRequest, '≤', 1.5),
  ratio('compute-bound, batched: rows/s backend ÷ peer batcher', ROWS, 'rows/s', computeBound.backend, computeBound.peerBatcher, '≥', 0.9),
  ratio('drift monitoring on ÷ off: req/s', REQ, 'req/s', tiny.backendOn, tiny.backendDriftOff, '≥', 0.97),
  ratio('drift monitoring on ÷ off: CPU/req', CPU, 'µs', tiny.backendOn, tiny.backendDriftOff, '≤', 1.03),
  ratio(`low load (${lowLoad.connections} conn): p50 backend ÷ per-request peer`, P50, 'ms', lowLoad.backend, lowLoad.peerPerRequest, '≤', 1.2),
  ...highLoad.map(({ connections, idle, delay }) => ratio(`high load (${connections} conn): req/s idle ÷ delay dispatch`, REQ, 'req/s', idle, delay, '≥', 0.95)),
]
