import type { LoadResult } from './autocannon.ts'

/** One autocannon run against a server, with what the server's metrics said about its batches. */
export interface ServedRun {
  load: LoadResult
  /** Mean rows per executed batch (1 where nothing batches). */
  meanBatch: number
}

/** Everything measured for one model, in one benchmark run. */
export interface ModelResults {
  model: string
  /** The version of the Node every row of these results ran on. */
  node: string
  rowsPerRequest: number
  /** The batch size of C(b): the batched run's mean, rounded. */
  b: number
  /** In-process ceilings C(batch), rows/s, by batch: 1, b, and any other runtime's b in the run. */
  ceilings: ReadonlyMap<number, number>
  httpCeiling: LoadResult
  unbatched: ServedRun
  batched: ServedRun
  /** Batching on, drift counting off: the comparison for the monitoring overhead (models with a baseline). */
  unmonitored?: ServedRun
  /** Whether the "batched beats the HTTP ceiling" target applies (the tiny model only). */
  checkAgainstHttp: boolean
}

/** Rows answered with 2xx per second: autocannon's mean req/s scaled by the share that succeeded. */
export const rowsPerSec = (load: LoadResult, rowsPerRequest: number): number =>
  load.completed > 0 ? load.reqPerSec * rowsPerRequest * (load.ok / load.completed) : 0

export interface Check {
  model: string
  name: string
  /** How the measured value was formed, for the reader. */
  detail: string
  measured: number
  target: number
  pass: boolean
}

const check = (model: string, name: string, detail: string, measured: number, target: number): Check => ({
  model, name, detail, measured, target, pass: Number.isFinite(measured) && measured >= target,
})

const k = (x: number): string => `${(x / 1000).toFixed(1)}k`

/** The targets from the issue, evaluated on one run's numbers. */
export const checksFor = (r: ModelResults): Check[] => {
  const c1 = r.ceilings.get(1) ?? Number.NaN
  const cb = r.ceilings.get(r.b) ?? Number.NaN
  const batched = rowsPerSec(r.batched.load, r.rowsPerRequest)
  const unbatched = rowsPerSec(r.unbatched.load, r.rowsPerRequest)
  const http = rowsPerSec(r.httpCeiling, r.rowsPerRequest)
  const limit = Math.min(cb, http)
  const binding = cb <= http ? `C(${r.b})` : 'H'
  const gain = batched / unbatched
  const modelGain = cb / c1
  const checks = [
    check(r.model, 'batched ÷ min(C(b), H×rows)', `${k(batched)} ÷ ${k(limit)} (binding: ${binding})`, batched / limit, 0.75),
    check(
      r.model,
      '(batched ÷ unbatched) ÷ (C(b) ÷ C(1))',
      `${gain.toFixed(2)}× ÷ ${modelGain.toFixed(2)}×`,
      gain / modelGain,
      0.75,
    ),
  ]
  if (r.checkAgainstHttp) checks.push(check(r.model, 'batched ÷ H', `${k(batched)} ÷ ${k(http)}`, batched / http, 1))
  if (r.unmonitored) {
    const off = rowsPerSec(r.unmonitored.load, r.rowsPerRequest)
    checks.push(check(r.model, 'drift monitoring on ÷ off', `${k(batched)} ÷ ${k(off)}`, batched / off, 0.95))
  }
  return checks
}
