import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** What `load/sim/measure-service/main.ts` measured on the real backend (committed as service-time.json). */
export interface ServiceTimeMeasurement {
  command: string
  measuredAt: string
  node: string
  model: string
  loadAverage1m: number
  /** Median session.run time (the server's compute_us) of one batch of `rows`. */
  points: Array<{ rows: number; computeUs: number }>
  /** t(b) = aUs + cUsPerRow·b, least squares over `points`. */
  fit: { aUs: number; cUsPerRow: number }
  /** The per-request work outside session.run, from the server's CPU under batched load. */
  front: {
    connections: number
    durationS: number
    rowsPerSecond: number
    cpuUsPerRequest: number
    meanBatch: number
    perRequestUs: number
  }
}

export const SERVICE_TIME_FILE = fileURLToPath(new URL('./service-time.json', import.meta.url))

export const readServiceTime = (file = SERVICE_TIME_FILE): ServiceTimeMeasurement =>
  JSON.parse(readFileSync(file, 'utf8')) as ServiceTimeMeasurement

/** Ordinary least squares y = intercept + slope·x. */
export const fitLine = (xs: readonly number[], ys: readonly number[]): { interceptUs: number; slopeUsPerRow: number } => {
  const n = xs.length
  const mx = xs.reduce((s, x) => s + x, 0) / n
  const my = ys.reduce((s, y) => s + y, 0) / n
  let sxy = 0
  let sxx = 0
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my)
    sxx += (xs[i] - mx) ** 2
  }
  const slopeUsPerRow = sxy / sxx
  return { interceptUs: my - slopeUsPerRow * mx, slopeUsPerRow }
}

/** Seconds one replica is busy with a batch of `rows` one-row requests. */
export type ServiceTime = (rows: number) => number

/**
 * The replica's cost of a batch: the engine's a + c·b plus each request's front work. Added, not
 * overlapped: the Deployment requests one core, which runs the event loop and the inference
 * worker alike (on a GPU node the engine part moves to the GPU: re-measure there).
 */
export const replicaServiceTime = ({ fit, front }: ServiceTimeMeasurement): ServiceTime => {
  const fixed = fit.aUs / 1e6
  const perRow = (fit.cUsPerRow + front.perRequestUs) / 1e6
  return (rows) => fixed + perRow * rows
}

/**
 * The same a + p·b shape with the per-row cost p set so full batches of `maxBatch` drain exactly
 * `capacityRps`: the replica's capacity is the figure the autoscaler was sized from (the rendered
 * manifest's annotation), the measurement supplies the per-batch cost a.
 */
export const serviceTimeAtCapacity = ({ fit }: ServiceTimeMeasurement, capacityRps: number, maxBatch: number): ServiceTime => {
  const fixed = fit.aUs / 1e6
  const perRow = (maxBatch / capacityRps - fixed) / maxBatch
  if (!(perRow > 0)) throw new Error(`a capacity of ${capacityRps} rows/s leaves no time per row after the ${fit.aUs} µs per batch`)
  return (rows) => fixed + perRow * rows
}
