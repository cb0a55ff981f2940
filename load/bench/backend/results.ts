import { median } from '../../harness/percentile.ts'
import { judge, type RatioTarget, type Verdict } from '../../harness/verdict.ts'
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

type Pick = (f: Figures) => number
type Side = (i: VerdictInputs) => Figures | undefined

const CPU: Pick = (f) => f.cpuUsPerRequest
const REQ: Pick = (f) => f.reqPerSec
const ROWS: Pick = (f) => f.rowsPerSec
const P50: Pick = (f) => f.p50Ms

/** A target over this bench's rows: `a ÷ b` of the figure `pick` reads. */
interface Target extends RatioTarget {
  pick: Pick
  a: Side
  b: Side
}

/** Issue 16's and issue 34's targets, in the order they are printed. */
const targetsOf = ({ lowLoad, highLoad }: VerdictInputs): Target[] => [
  { name: 'tiny, batching on: CPU/req backend ÷ peer batcher', pick: CPU, unit: 'µs', a: (i) => i.tiny.backendOn, b: (i) => i.tiny.peerBatcher, comparator: '≤', target: 1.1 },
  { name: 'tiny, batching on: req/s backend ÷ peer batcher', pick: REQ, unit: 'req/s', a: (i) => i.tiny.backendOn, b: (i) => i.tiny.peerBatcher, comparator: '≥', target: 0.95 },
  { name: 'tiny, batching off: CPU/req backend ÷ per-request peer', pick: CPU, unit: 'µs', a: (i) => i.tiny.backendOff, b: (i) => i.tiny.peerPerRequest, comparator: '≤', target: 1.5 },
  { name: 'compute-bound, batched: rows/s backend ÷ peer batcher', pick: ROWS, unit: 'rows/s', a: (i) => i.computeBound.backend, b: (i) => i.computeBound.peerBatcher, comparator: '≥', target: 0.9 },
  { name: 'drift monitoring on ÷ off: req/s', pick: REQ, unit: 'req/s', a: (i) => i.tiny.backendOn, b: (i) => i.tiny.backendDriftOff, comparator: '≥', target: 0.97 },
  { name: 'drift monitoring on ÷ off: CPU/req', pick: CPU, unit: 'µs', a: (i) => i.tiny.backendOn, b: (i) => i.tiny.backendDriftOff, comparator: '≤', target: 1.03 },
  { name: `low load (${lowLoad.connections} conn): p50 backend ÷ per-request peer`, pick: P50, unit: 'ms', a: (i) => i.lowLoad.backend, b: (i) => i.lowLoad.peerPerRequest, comparator: '≤', target: 1.2 },
  ...highLoad.map(({ connections }, k): Target => ({ name: `high load (${connections} conn): req/s idle ÷ delay dispatch`, pick: REQ, unit: 'req/s', a: (i) => i.highLoad[k]?.idle, b: (i) => i.highLoad[k]?.delay, comparator: '≥', target: 0.95 })),
]

/**
 * The targets judged on one run's medians. With `duplicates` (the same rows' twins from the same
 * run), each verdict carries its noise floor.
 */
export const verdictsFor = (inputs: VerdictInputs, duplicates?: VerdictInputs): Verdict[] =>
  targetsOf(inputs).map(({ pick, a, b, ...target }) => {
    const read = (side: Side, from: VerdictInputs | undefined): number | undefined => {
      const f = from && side(from)
      return f ? pick(f) : undefined
    }
    return judge(target, read(a, inputs), read(b, inputs), { a: read(a, duplicates), b: read(b, duplicates) })
  })
