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
const UNBATCHED = { dispatch: 'delay' as const, maxBatchSize: 1, maxQueueDelayS: 0, preferredBatchSizes: [], maxQueueSize: Number.MAX_SAFE_INTEGER, instances: 1 }

const run = (utilization: number, service: 'exponential' | 'deterministic', seed: number, dispatch: 'idle' | 'delay' = 'delay') => {
  const arrivalRate = utilization * SERVICE_RATE
  const random = createRandom(seed)
  const serviceRandom = createRandom(seed + 1)
  const serviceTime = service === 'exponential'
    ? () => -Math.log(1 - serviceRandom.next()) / SERVICE_RATE
    : () => 1 / SERVICE_RATE
  return simulate({
    arrivals: arrivalsOf({ kind: 'rates', ratesPerSecond: new Float64Array(DURATION_S).fill(arrivalRate) }, random),
    durationS: DURATION_S,
    batcher: { ...UNBATCHED, dispatch },
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

    it(`M/D/1 at ρ = ${rho}: mean wait ρ/(2μ(1−ρ)), under either dispatch policy`, () => {
      for (const dispatch of ['delay', 'idle'] as const) {
        const result = run(rho, 'deterministic', 23, dispatch)
        expect(relativeError(result.meanWaitS, rho / (2 * SERVICE_RATE * (1 - rho)))).toBeLessThan(0.03)
        expect(relativeError(result.meanLatencyS - result.meanWaitS, 1 / SERVICE_RATE)).toBeLessThan(1e-9)
      }
    })
  }
})

describe('dispatch policies of a batching replica', () => {
  // Rare arrivals: nearly every request finds the instance idle and the queue empty.
  const lone = (dispatch: 'idle' | 'delay') => {
    const random = createRandom(5)
    return simulate({
      arrivals: arrivalsOf({ kind: 'rates', ratesPerSecond: new Float64Array(600).fill(2) }, random),
      durationS: 600,
      batcher: { dispatch, maxBatchSize: 64, maxQueueDelayS: 0.002, preferredBatchSizes: [32, 64], maxQueueSize: 4096, instances: 1 },
      serviceTime: () => 0.001,
      routing: 'random',
      scaling: { kind: 'fixed', replicas: 1 },
      random,
    })
  }

  it('idle sends a lone request at once; delay holds it for max_queue_delay', () => {
    const idle = lone('idle')
    const delay = lone('delay')
    expect(idle.served).toBeGreaterThan(1_000)
    expect(idle.meanWaitS).toBeLessThan(1e-5)
    expect(relativeError(delay.meanWaitS, 0.002)).toBeLessThan(0.05)
  })

  it('idle still forms batches under load: requests arriving while the instance runs leave together', () => {
    const random = createRandom(9)
    const busy = simulate({
      arrivals: arrivalsOf({ kind: 'rates', ratesPerSecond: new Float64Array(60).fill(5_000) }, random),
      durationS: 60,
      batcher: { dispatch: 'idle', maxBatchSize: 64, maxQueueDelayS: 0.002, preferredBatchSizes: [], maxQueueSize: 4096, instances: 1 },
      serviceTime: (rows) => 0.0005 + 0.00001 * rows,
      routing: 'random',
      scaling: { kind: 'fixed', replicas: 1 },
      random,
    })
    expect(busy.served).toBeGreaterThan(250_000)
    expect(busy.meanBatchRows).toBeGreaterThan(2)
  })
})
