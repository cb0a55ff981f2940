import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Batcher, type BatcherOptions, type BatchObserver, type BatchResult } from '../../../backend/batcher/batcher.ts'
import { InferenceError } from '../../../backend/errors.ts'
import type { Executor } from '../../../backend/executor/executor.ts'
import { alone, HeldExecutor, ManualClock, nextTurn, probabilities, request, row, startTinyExecutor } from './harness.ts'

/**
 * When a batch leaves, with time and the instances in the test's hands: the manual clock never
 * moves unless advanced (so "at once" means with no time passing and no timer armed), and the
 * held executor keeps its instances busy until released.
 */
let one: Awaited<ReturnType<typeof startTinyExecutor>>
let two: Awaited<ReturnType<typeof startTinyExecutor>>

beforeAll(async () => {
  ;[one, two] = await Promise.all([startTinyExecutor(1), startTinyExecutor(2)])
})

afterAll(async () => {
  await Promise.all([one?.close(), two?.close()])
})

const DELAY_US = 200_000

const setup = (inner: () => Executor, options: Partial<BatcherOptions> = {}, observer?: BatchObserver) => {
  const executor = new HeldExecutor(inner())
  const clock = new ManualClock()
  const batcher = new Batcher(executor, { batching: true, dispatch: 'idle', maxBatchSize: 4, maxQueueDelayUs: DELAY_US, preferredBatchSizes: [], maxQueueSize: 64, clock, ...options }, observer)
  return { executor, clock, batcher }
}

const explain = (results: BatchResult[]) => results.map((r) => [r.batchSize, r.batchReason])

describe('idle dispatch', () => {
  it('runs a lone request at once on an idle instance: no time passes, no timer is armed', async () => {
    const { executor, clock, batcher } = setup(() => one.executor)
    executor.release()
    const result = await batcher.submit(request([row(1)]))
    expect(explain([result])).toEqual([[1, 'idle']])
    expect(result.queueUs).toBe(0)
    expect(clock.pending).toBe(0)
    expect(executor.batches).toEqual([1])
  })

  it('queues what arrives while every instance is busy and sends it as one batch when the instance frees', async () => {
    const { executor, clock, batcher } = setup(() => one.executor)
    const first = batcher.submit(request([row(1)]))
    await nextTurn()
    expect(executor.batches).toEqual([1])
    const later: Array<Promise<BatchResult>> = []
    for (const i of [2, 3, 4]) {
      later.push(batcher.submit(request([row(i)])))
      await nextTurn()
    }
    expect(executor.batches).toEqual([1])
    expect(clock.pending).toBe(0)
    executor.release()
    expect(explain([await first])).toEqual([[1, 'idle']])
    const results = await Promise.all(later)
    expect(explain(results)).toEqual(Array(3).fill([3, 'idle']))
    expect(new Set(results.map((r) => r.batchSeq)).size).toBe(1)
    expect(executor.batches).toEqual([1, 3])
    const expected = await alone(one.executor, [row(2), row(3), row(4)])
    results.forEach((r, i) => probabilities(r.outputs.probabilities)[0]!.forEach((x, k) => expect(x).toBeCloseTo(expected[i]![k]!, 5)))
  })

  it('sends at most max_batch_size rows when an instance frees; the rest goes when one frees again', async () => {
    const { executor, batcher } = setup(() => one.executor, { maxBatchSize: 4 })
    const first = batcher.submit(request([row(0)]))
    await nextTurn()
    const queued = Array.from({ length: 6 }, (_, i) => batcher.submit(request([row(i + 1)])))
    executor.release()
    await first
    expect(explain(await Promise.all(queued))).toEqual([...Array(4).fill([4, 'full']), ...Array(2).fill([2, 'idle'])])
    expect(executor.batches).toEqual([1, 4, 2])
  })

  it('lets neither preferred sizes nor the delay hold back or cut a batch', async () => {
    const { executor, clock, batcher } = setup(() => one.executor, { maxBatchSize: 8, preferredBatchSizes: [3] })
    const first = batcher.submit(request([row(0)]))
    await nextTurn()
    const queued = [1, 2, 3, 4].map((i) => batcher.submit(request([row(i)])))
    await nextTurn()
    expect(clock.pending).toBe(0)
    executor.release()
    await first
    expect(explain(await Promise.all(queued))).toEqual(Array(4).fill([4, 'idle']))
    expect(executor.batches).toEqual([1, 4])
  })

  it('with two instances sends a request to the free one at once, and queues only while both are busy', async () => {
    const { executor, clock, batcher } = setup(() => two.executor)
    const a = batcher.submit(request([row(1)]))
    await nextTurn()
    const b = batcher.submit(request([row(2)]))
    await nextTurn()
    expect(executor.batches).toEqual([1, 1])
    const queued = [3, 4, 5].map((i) => batcher.submit(request([row(i)])))
    await nextTurn()
    expect(executor.batches).toEqual([1, 1])
    expect(clock.pending).toBe(0)
    executor.release()
    expect(explain(await Promise.all([a, b]))).toEqual([[1, 'idle'], [1, 'idle']])
    expect(explain(await Promise.all(queued))).toEqual(Array(3).fill([3, 'idle']))
    expect(executor.batches).toEqual([1, 1, 3])
  })

  it('still drops a request whose deadline passes while every instance is busy, before it reaches the model', async () => {
    const refused: string[] = []
    const sizes: number[] = []
    const { executor, clock, batcher } = setup(() => one.executor, { maxBatchSize: 8 }, { batch: (size) => sizes.push(size), refused: (r) => refused.push(r) })
    const first = batcher.submit(request([row(0)]))
    await nextTurn()
    // A minute on the manual clock: only the batcher's own clock can expire it within the test.
    const late = batcher.submit(request([row(1)], clock.now() + 60_000))
    const onTime = batcher.submit(request([row(2)]))
    clock.advance(60_000)
    const error = await late.catch((e: unknown) => e)
    expect((error as InferenceError).status).toBe(504)
    expect(refused).toEqual(['expired'])
    executor.release()
    await first
    expect(explain([await onTime])).toEqual([[1, 'idle']])
    expect(sizes).toEqual([1, 1])
  })
})

describe('Retry-After of a 429, from the measured drain rate', () => {
  /** One instance measured at 4 rows/s: a batch of 4 rows that took 1 s on the manual clock. */
  const measured = async (options: Partial<BatcherOptions>) => {
    const setUp = setup(() => one.executor, { maxBatchSize: 4, ...options })
    const first = setUp.batcher.submit(request([row(0), row(1), row(2), row(3)]))
    await nextTurn()
    setUp.clock.advance(1_000)
    setUp.executor.release()
    await first
    await nextTurn()
    expect(setUp.batcher.drainRate).toBe(4)
    expect(setUp.batcher.depth).toBe(0)
    return setUp
  }

  it('queue full: the seconds until the excess rows have drained, rounded up', async () => {
    const { batcher } = await measured({ maxQueueSize: 10 })
    // Queued in one turn, before the deferred pump: 10 rows wait, and 5 more are 5 over the limit (1.25 s).
    const waiting = [batcher.submit(request([row(1), row(2), row(3), row(4)])), batcher.submit(request([row(5), row(6), row(7), row(8)])), batcher.submit(request([row(9), row(10)]))]
    const error = await batcher.submit(request([row(11), row(12), row(13), row(14), row(15)])).catch((e: unknown) => e)
    await Promise.all(waiting)
    expect(error).toMatchObject({ status: 429, reason: 'queue_full', headers: { 'retry-after': '2' } })
  })

  it('deadline that cannot be met: the seconds until the rows ahead have drained, rounded up', async () => {
    const { batcher, clock } = await measured({ maxQueueSize: 64 })
    const waiting = [batcher.submit(request([row(1), row(2), row(3), row(4)])), batcher.submit(request([row(5)]))]
    // 5 rows ahead at 4 rows/s (1.25 s); with its own 4 rows the wait is 2.25 s against 1 s left.
    const error = await batcher.submit(request([row(6), row(7), row(8), row(9)], clock.now() + 1_000)).catch((e: unknown) => e)
    await Promise.all(waiting)
    expect(error).toMatchObject({ status: 429, reason: 'deadline_unmeetable', headers: { 'retry-after': '2' } })
  })
})

describe('delay dispatch', () => {
  it('holds a lone request for max_queue_delay_us although the instance is idle, then sends it', async () => {
    const { executor, clock, batcher } = setup(() => one.executor, { dispatch: 'delay' })
    executor.release()
    const pending = batcher.submit(request([row(1)]))
    await nextTurn()
    clock.advance(DELAY_US / 1000 - 1)
    await nextTurn()
    expect(executor.batches).toEqual([])
    expect(clock.pending).toBe(1)
    clock.advance(1)
    const result = await pending
    expect(explain([result])).toEqual([[1, 'delay']])
    expect(result.queueUs).toBe(DELAY_US)
  })

  it('sends the largest preferred size the queue adds up to when the busy instance frees: [2, 4] with 4 rows queued is one batch of 4', async () => {
    const { executor, clock, batcher } = setup(() => one.executor, { dispatch: 'delay', maxBatchSize: 8, preferredBatchSizes: [2, 4] })
    const busy = batcher.submit(request([row(0), row(1)]))
    await nextTurn()
    expect(executor.batches).toEqual([2])
    const queued = [2, 3, 4, 5].map((i) => batcher.submit(request([row(i)])))
    await nextTurn()
    expect(executor.batches).toEqual([2])
    executor.release()
    expect(explain([await busy])).toEqual([[2, 'preferred']])
    expect(explain(await Promise.all(queued))).toEqual(Array(4).fill([4, 'preferred']))
    expect(executor.batches).toEqual([2, 4])
    expect(clock.now()).toBe(0)
  })

  it('sends a preferred size at once, without the delay', async () => {
    const { executor, batcher } = setup(() => one.executor, { dispatch: 'delay', maxBatchSize: 8, preferredBatchSizes: [3] })
    executor.release()
    const results = await Promise.all([1, 2, 3].map((i) => batcher.submit(request([row(i)]))))
    expect(explain(results)).toEqual(Array(3).fill([3, 'preferred']))
  })
})
