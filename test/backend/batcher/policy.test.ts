import { describe, expect, it } from 'vitest'
import { Batcher, type BatchExecutor } from '../../../backend/batcher/batcher.ts'
import type { RunResult } from '../../../backend/executor/executor.ts'
import type { TensorMap } from '../../../backend/executor/tensor.ts'
import type { BatcherSettings } from '../../../load/sim/batcher-settings.ts'
import { simulate } from '../../../load/sim/simulate.ts'
import { arrivalsOf } from '../../../load/sim/trace.ts'
import type { BatchReason } from '../../../shared/protocol.ts'
import { createRandom } from '../../../tools/training/random.ts'
import { ManualClock, nextTurn, row, rows } from './harness.ts'

/**
 * The batcher and the autoscaling simulator share one batch policy: the same arrivals of one-row
 * requests, run through the real batcher (manual clock, an executor that takes a fixed time) and
 * through the simulator, must leave in the same batches at the same times for the same reasons.
 * Times are milliseconds on both sides (the simulator is unit-free but for its report buckets),
 * so both compute with the very same numbers.
 */

type Batch = [at: number, rows: number, reason: BatchReason]

/** Instances that each hold a batch for `serviceMs` of the manual clock, answering its inputs back. */
class TimedExecutor implements BatchExecutor {
  readonly started: Array<[at: number, rows: number]> = []
  private running = 0

  constructor(readonly size: number, private readonly clock: ManualClock, private readonly serviceMs: number) {}

  get idle(): number {
    return this.size - this.running
  }

  run(feeds: TensorMap): Promise<RunResult> {
    this.running++
    this.started.push([this.clock.now(), Object.values(feeds)[0]!.dims[0]!])
    return new Promise((resolve) => {
      this.clock.setTimeout(() => {
        this.running--
        resolve({ outputs: feeds, computeUs: 0 })
      }, this.serviceMs)
    })
  }
}

const throughBatcher = async (settings: BatcherSettings, serviceMs: number, arrivalsMs: readonly number[]): Promise<Batch[]> => {
  const clock = new ManualClock()
  const executor = new TimedExecutor(settings.instances, clock, serviceMs)
  // Told at completion; a fixed service time completes batches in the order they started.
  const reasons: BatchReason[] = []
  const batcher = new Batcher(executor, {
    batching: true,
    dispatch: settings.dispatch,
    maxBatchSize: settings.maxBatchSize,
    maxQueueDelayUs: settings.maxQueueDelayS * 1000,
    preferredBatchSizes: settings.preferredBatchSizes,
    maxQueueSize: settings.maxQueueSize,
    clock,
  }, { batch: (_size, reason) => void reasons.push(reason), refused() {} })
  const answers: Array<Promise<unknown>> = []
  let next = 0
  // The simulator's event order: at a tie a timer (a finished batch, a delay) goes before an arrival.
  while (next < arrivalsMs.length || clock.nextAt !== Infinity) {
    const arrival = next < arrivalsMs.length ? arrivalsMs[next] : Infinity
    if (clock.nextAt <= arrival) {
      clock.advance(clock.nextAt - clock.now())
    } else {
      clock.advance(arrival - clock.now())
      answers.push(batcher.submit({ inputs: rows([row(next)]), rows: 1, outputs: ['features'] }))
      next++
    }
    // Completions and idle dispatch's deferred pump run before time moves on.
    await nextTurn()
  }
  await Promise.all(answers)
  expect(reasons).toHaveLength(executor.started.length)
  return executor.started.map(([at, size], i) => [at, size, reasons[i]!])
}

const throughSimulator = (settings: BatcherSettings, serviceMs: number, arrivalsMs: readonly number[]): Batch[] => {
  const batches: Batch[] = []
  const random = createRandom(1)
  const result = simulate({
    arrivals: arrivalsOf({ kind: 'arrivals', timesS: Float64Array.from(arrivalsMs) }, random),
    durationS: arrivalsMs[arrivalsMs.length - 1]! + 1_000,
    batcher: settings,
    serviceTime: () => serviceMs,
    routing: 'round-robin',
    scaling: { kind: 'fixed', replicas: 1 },
    random,
    onBatch: (at, size, reason) => void batches.push([at, size, reason]),
  })
  expect(result.served).toBe(arrivalsMs.length)
  return batches
}

const settings = (overrides: Partial<BatcherSettings>): BatcherSettings => ({
  dispatch: 'delay',
  maxBatchSize: 4,
  maxQueueDelayS: 20,
  preferredBatchSizes: [],
  maxQueueSize: 10_000,
  instances: 1,
  ...overrides,
})

/** Integer arrival times in alternating bursts (gaps of 1–2 ms) and lulls (gaps of 5–34 ms), 40 arrivals each. */
const randomArrivals = (count: number, seed: number): number[] => {
  const random = createRandom(seed)
  const times: number[] = []
  for (let t = 0, i = 0; i < count; i++) {
    const burst = Math.floor(i / 40) % 2 === 0
    times.push((t += burst ? 1 + Math.floor(random.next() * 2) : 5 + Math.floor(random.next() * 30)))
  }
  return times
}

describe('one batch policy for the batcher and the simulator', () => {
  it('forms the batches worked out by hand under delay dispatch: preferred, delay, full, delay', async () => {
    const delay = settings({ preferredBatchSizes: [3] })
    const arrivals = [0, 3, 5, 30, 52, 53, 54, 55, 56]
    const expected: Batch[] = [[5, 3, 'preferred'], [50, 1, 'delay'], [60, 4, 'full'], [76, 1, 'delay']]
    expect(await throughBatcher(delay, 10, arrivals)).toEqual(expected)
    expect(throughSimulator(delay, 10, arrivals)).toEqual(expected)
  })

  // A service time off the integer grid, so no batch finishes at the very moment of an arrival or a delay.
  const SERVICE_MS = 7 + 1 / 1024
  const cases: Array<[string, BatcherSettings, BatchReason[]]> = [
    ['delay dispatch with preferred sizes', settings({ preferredBatchSizes: [2, 3] }), ['full', 'preferred', 'delay']],
    ['delay dispatch with preferred sizes smaller than what waits', settings({ maxBatchSize: 6, preferredBatchSizes: [2, 3, 5] }), ['full', 'preferred', 'delay']],
    ['delay dispatch without preferred sizes', settings({}), ['full', 'delay']],
    ['idle dispatch', settings({ dispatch: 'idle' }), ['full', 'idle']],
    ['idle dispatch on two instances', settings({ dispatch: 'idle', instances: 2, maxBatchSize: 3 }), ['full', 'idle']],
    ['delay dispatch on two instances', settings({ instances: 2, preferredBatchSizes: [3] }), ['full', 'preferred', 'delay']],
  ]
  for (const [name, batcher, reasons] of cases) {
    it(`forms the same batches from a random trace under ${name}`, async () => {
      const arrivals = randomArrivals(400, 29)
      const fromBatcher = await throughBatcher(batcher, SERVICE_MS, arrivals)
      expect(throughSimulator(batcher, SERVICE_MS, arrivals)).toEqual(fromBatcher)
      // The trace reaches every way a batch can leave under this policy: the comparison is not of trivial batches.
      expect(new Set(fromBatcher.map(([, , reason]) => reason))).toEqual(new Set(reasons))
    })
  }
})
