import { describe, expect, it } from 'vitest'
import { createRandom } from '../../../tools/training/random.ts'
import { simulate } from '../../../load/sim/simulate.ts'
import { arrivalsOf } from '../../../load/sim/trace.ts'

/**
 * The simulator against queueing theory, where the answer is known: one replica that serves one
 * request at a time (batches of 1, no delay), Poisson arrivals, exponential (M/M/1) or
 * deterministic (M/D/1) service. Seeded: every run draws the same samples.
 */

const SERVICE_RATE = 1_000
const DURATION_S = 3_000
const UNBATCHED = { maxBatchSize: 1, maxQueueDelayS: 0, preferredBatchSizes: [], maxQueueSize: Number.MAX_SAFE_INTEGER, instances: 1 }

const run = (utilization: number, service: 'exponential' | 'deterministic', seed: number) => {
  const arrivalRate = utilization * SERVICE_RATE
  const random = createRandom(seed)
  const serviceRandom = createRandom(seed + 1)
  const serviceTime = service === 'exponential'
    ? () => -Math.log(1 - serviceRandom.next()) / SERVICE_RATE
    : () => 1 / SERVICE_RATE
  return simulate({
    arrivals: arrivalsOf({ kind: 'rates', ratesPerSecond: new Float64Array(DURATION_S).fill(arrivalRate) }, random),
    durationS: DURATION_S,
    batcher: UNBATCHED,
    serviceTime,
    routing: 'random',
    scaling: { kind: 'fixed', replicas: 1 },
    random,
  })
}

const relativeError = (measured: number, expected: number) => Math.abs(measured / expected - 1)

describe('one replica, one request at a time', () => {
  for (const rho of [0.5, 0.7, 0.9]) {
    it(`M/M/1 at ρ = ${rho}: mean wait ρ/(μ−λ), sojourn p95 ln 20/(μ−λ)`, () => {
      const result = run(rho, 'exponential', 11)
      const lambda = rho * SERVICE_RATE
      expect(result.served).toBeGreaterThan(0.99 * lambda * DURATION_S)
      expect(relativeError(result.meanWaitS, rho / (SERVICE_RATE - lambda))).toBeLessThan(0.03)
      // The mean wait is the same under any order of service; the sojourn time's tail is FIFO's own.
      expect(relativeError(result.p95S, Math.log(20) / (SERVICE_RATE - lambda))).toBeLessThan(0.03)
    })

    it(`M/D/1 at ρ = ${rho}: mean wait ρ/(2μ(1−ρ))`, () => {
      const result = run(rho, 'deterministic', 23)
      expect(relativeError(result.meanWaitS, rho / (2 * SERVICE_RATE * (1 - rho)))).toBeLessThan(0.03)
      expect(relativeError(result.meanLatencyS - result.meanWaitS, 1 / SERVICE_RATE)).toBeLessThan(1e-9)
    })
  }
})
