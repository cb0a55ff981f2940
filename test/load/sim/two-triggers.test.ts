import { describe, expect, it } from 'vitest'
import { createRandom } from '../../../tools/training/random.ts'
import { podRates, type Scrape } from '../../../load/sim/cluster.ts'
import { Replica } from '../../../load/sim/replica.ts'
import type { AutoscalerConfig } from '../../../load/sim/scaler-config.ts'
import { warmReplicas } from '../../../load/sim/scenarios.ts'
import { simulate } from '../../../load/sim/simulate.ts'
import { arrivalsOf, type Trace } from '../../../load/sim/trace.ts'

/** The autoscaler's leading trigger in the simulator: the request rate as Prometheus' rate() reads it. */

const scrape = (at: number, counters: Array<[Replica, number]>): Scrape => ({ at, depths: counters.map(() => 0), missing: 0, counters: new Map(counters) })

describe('rate() over the scrapes of its range', () => {
  it("is each pod's increase from its first to its last sample over the time between them", () => {
    const [a, b] = [new Replica(), new Replica()]
    expect(podRates([scrape(0, [[a, 0], [b, 100]]), scrape(10, [[a, 500], [b, 100]]), scrape(20, [[a, 2_000], [b, 300]])])).toEqual([100, 10])
  })

  it('a pod with one sample has no rate yet', () => {
    const [a, b] = [new Replica(), new Replica()]
    expect(podRates([scrape(0, [[a, 0]]), scrape(10, [[a, 1_000], [b, 50]])])).toEqual([100])
    expect(podRates([scrape(0, [[a, 0]])])).toEqual([])
    expect(podRates([])).toEqual([])
  })
})

const behavior: AutoscalerConfig['behavior'] = {
  scaleUp: { stabilizationWindowSeconds: 0, selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }, { type: 'Pods', value: 4, periodSeconds: 15 }] },
  scaleDown: { stabilizationWindowSeconds: 300, selectPolicy: 'Min', policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] },
}
const queueOnly: AutoscalerConfig = { source: 'keda', minReplicas: 1, maxReplicas: 10, target: 6, behavior }
const withRate: AutoscalerConfig = { ...queueOnly, rate: { target: 1_000, windowS: 30 } }

/** 500 req/s for a minute, then 2,900 req/s: one replica serves a lone request in 0.1 ms, so its queue stays short. */
const step: Trace = { kind: 'rates', ratesPerSecond: Float64Array.from({ length: 240 }, (_, t) => (t < 60 ? 500 : 2_900)) }

const run = (config: AutoscalerConfig) => {
  const random = createRandom(3)
  return simulate({
    arrivals: arrivalsOf(step, random),
    durationS: 240,
    batcher: { dispatch: 'idle', maxBatchSize: 64, maxQueueDelayS: 0.002, preferredBatchSizes: [], maxQueueSize: 4096, instances: 1 },
    serviceTime: (rows) => 0.00005 + 0.00005 * rows,
    routing: 'random',
    scaling: { kind: 'autoscaler', config, startDelayS: 20, scrapeIntervalS: 10 },
    random,
    bucketS: 30,
  })
}

describe('the simulated autoscaler with both triggers', () => {
  it('the rate trigger scales on arrivals the queue-depth gauge does not see; the HPA takes the larger', () => {
    const queue = run(queueOnly)
    const both = run(withRate)
    expect(queue.maxReplicas).toBe(1)
    // 2,900 req/s against 1,000 per replica: three pods, within about a minute of the step.
    expect(both.maxReplicas).toBe(3)
    expect(both.buckets[1]!.replicas).toBe(1)
    expect(both.buckets[7]!.replicas).toBe(3)
  })

  it('the HPA variant: per-pod rates, new pods without a rate counted as missing', () => {
    const both = run({ ...withRate, source: 'hpa' })
    // A pod that just became ready shows a rate from a partial range, so the per-pod average can overshoot by one.
    expect(both.maxReplicas).toBeGreaterThanOrEqual(3)
    expect(both.maxReplicas).toBeLessThanOrEqual(4)
    expect(both.buckets[7]!.replicas).toBeGreaterThanOrEqual(3)
    expect(run({ ...queueOnly, source: 'hpa' }).maxReplicas).toBe(1)
  })

  it('a trace starts with the pods the rate trigger settles at for its first minute, within min and max', () => {
    expect(warmReplicas(withRate, step)).toBe(1)
    expect(warmReplicas(withRate, { kind: 'rates', ratesPerSecond: new Float64Array(120).fill(4_500) })).toBe(5)
    expect(warmReplicas(withRate, { kind: 'rates', ratesPerSecond: new Float64Array(120).fill(50_000) })).toBe(10)
    expect(warmReplicas(queueOnly, { kind: 'rates', ratesPerSecond: new Float64Array(120).fill(4_500) })).toBe(1)
  })
})
