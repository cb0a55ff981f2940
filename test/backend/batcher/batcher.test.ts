import { performance } from 'node:perf_hooks'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Batcher, type BatcherOptions, type BatchObserver } from '../../../backend/batcher/batcher.ts'
import { InferenceError } from '../../../backend/errors.ts'
import type { Executor } from '../../../backend/executor/executor.ts'
import type { DispatchPolicy } from '../../../backend/repository/model-config.ts'
import { alone, probabilities, request, row, startTinyExecutor, WIDTH } from './harness.ts'

setFlagsFromString('--expose-gc')
const collectGarbage = runInNewContext('gc') as () => void

let tiny: Awaited<ReturnType<typeof startTinyExecutor>>
let executor: Executor

const batcher = (dispatch: DispatchPolicy, options: Partial<BatcherOptions>, observer?: BatchObserver) =>
  new Batcher(executor, { batching: true, dispatch, maxBatchSize: 4, maxQueueDelayUs: 200_000, preferredBatchSizes: [], maxQueueSize: 64, ...options }, observer)

beforeAll(async () => {
  tiny = await startTinyExecutor(1)
  executor = tiny.executor
})

afterAll(async () => {
  await tiny?.close()
})

/** What holds whichever policy decides when a batch leaves. */
describe.each(['idle', 'delay'] as const)('Batcher under %s dispatch', (dispatch) => {
  it('sends batches in arrival order, none larger than max_batch_size; the remainder goes by the policy', async () => {
    const b = batcher(dispatch, { maxBatchSize: 4 })
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => b.submit(request([row(i)]))))
    expect(results.map((r) => r.batchSeq)).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3, 3])
    expect(results.map((r) => r.batchReason)).toEqual([...Array(8).fill('full'), dispatch, dispatch])
    expect(results.map((r) => r.batchSize)).toEqual([4, 4, 4, 4, 4, 4, 4, 4, 2, 2])
  })

  it('keeps no answered request alive: the queue lets go of what it sent', async () => {
    const b = batcher(dispatch, { maxBatchSize: 4, maxQueueDelayUs: 0 })
    const sent = Array.from({ length: 10 }, (_, i) => request([row(i)]))
    const alive = sent.map((r) => new WeakRef(r.inputs))
    await Promise.all(sent.map((r) => b.submit(r)))
    sent.length = 0
    // A WeakRef holds its target to the end of the job that made it: collect in a later one.
    await new Promise((resolve) => setTimeout(resolve, 0))
    collectGarbage()
    expect(alive.filter((ref) => ref.deref() !== undefined)).toHaveLength(0)
    expect(b.depth).toBe(0)
  })

  it('gives every caller exactly its own rows', async () => {
    const b = batcher(dispatch, { maxBatchSize: 8 })
    const inputs = [[row(1)], [row(2), row(3)], [row(4)], [row(5), row(6), row(7), row(8)]]
    const results = await Promise.all(inputs.map((v) => b.submit(request(v))))
    expect(new Set(results.map((r) => r.batchSeq)).size).toBe(1)
    for (const [i, v] of inputs.entries()) {
      const got = probabilities(results[i].outputs.probabilities)
      const expected = await alone(executor, v)
      expect(got).toHaveLength(v.length)
      got.forEach((p, j) => p.forEach((x, k) => expect(x).toBeCloseTo(expected[j][k], 5)))
    }
  })

  it('splits a request larger than the batch and reassembles its rows in order', async () => {
    const b = batcher(dispatch, { maxBatchSize: 4, maxQueueDelayUs: 0 })
    const values = Array.from({ length: 10 }, (_, i) => row(i + 1))
    const result = await b.submit(request(values))
    const got = probabilities(result.outputs.probabilities)
    const expected = await alone(executor, values)
    expect(got).toHaveLength(10)
    got.forEach((p, j) => p.forEach((x, k) => expect(x).toBeCloseTo(expected[j][k], 5)))
    expect(result.batchSize).toBe(4)
  })

  it('refuses past max_queue_size with 429 and a Retry-After, without queueing', async () => {
    const refused: string[] = []
    const b = batcher(dispatch, { maxBatchSize: 8, maxQueueSize: 4 }, { batch() {}, refused: (r) => refused.push(r) })
    const waiting = b.submit(request([row(1), row(2), row(3), row(4)]))
    const error = await b.submit(request([row(5)])).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InferenceError)
    expect((error as InferenceError).status).toBe(429)
    expect((error as InferenceError).headers['retry-after']).toMatch(/^[1-9][0-9]*$/)
    expect(refused).toEqual(['queue_full'])
    expect(b.depth).toBe(4)
    expect((await waiting).batchSize).toBe(4)
  })

  it('refuses at admission a request whose predicted wait exceeds its deadline', async () => {
    const refused: string[] = []
    const b = batcher(dispatch, { maxBatchSize: 4, maxQueueDelayUs: 0 }, { batch() {}, refused: (r) => refused.push(r) })
    await b.submit(request([row(1)]))
    expect(b.drainRate).toBeGreaterThan(0)
    const error = await b.submit(request([row(2)], performance.now())).catch((e: unknown) => e)
    expect((error as InferenceError).status).toBe(429)
    expect((error as InferenceError).message).toMatch(/deadline cannot be met/)
    expect(refused).toEqual(['deadline_unmeetable'])
  })

  it('runs every request alone when batching is off', async () => {
    const b = batcher(dispatch, { batching: false, maxBatchSize: 4 })
    const results = await Promise.all([1, 2, 3].map((i) => b.submit(request([row(i)]))))
    expect(results.map((r) => [r.batchSize, r.batchReason])).toEqual(Array(3).fill([1, 'single']))
    expect(new Set(results.map((r) => r.batchSeq)).size).toBe(3)
  })

  it('fails only the callers of a batch that cannot be put together, and keeps the queue moving', async () => {
    const b = batcher(dispatch, { maxBatchSize: 2 })
    // Claims one row of 4 but carries 6 values: concatenating it overruns the batch's buffer.
    const broken = { inputs: { features: { datatype: 'FP32' as const, dims: [1, WIDTH], data: Float32Array.from([1, 2, 3, 4, 5, 6]) } }, rows: 1, outputs: ['probabilities'] }
    const outcomes = await Promise.allSettled([b.submit(request([row(1)])), b.submit(broken)])
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected'])
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as InferenceError).status : 0))).toEqual([500, 500])
    const after = await b.submit(request([row(2)]))
    expect(probabilities(after.outputs.probabilities)[0]![0]).toBeCloseTo((await alone(executor, [row(2)]))[0]![0]!, 5)
    expect(b.depth).toBe(0)
  })

  it('drains: answers what it accepted, then refuses new work with 503', async () => {
    const b = batcher(dispatch, { maxBatchSize: 8, maxQueueDelayUs: 10_000_000 })
    const accepted = [b.submit(request([row(1)])), b.submit(request([row(2)]))]
    await b.drain()
    const results = await Promise.all(accepted)
    expect(results.map((r) => r.batchSize)).toEqual([2, 2])
    const error = await b.submit(request([row(3)])).catch((e: unknown) => e)
    expect((error as InferenceError).status).toBe(503)
  })
})

describe('Batcher under delay dispatch: Triton timing', () => {
  it('sends a preferred size as soon as queued requests add up to it', async () => {
    const b = batcher('delay', { maxBatchSize: 8, preferredBatchSizes: [3] })
    const first = await Promise.all([1, 2, 3].map((i) => b.submit(request([row(i)]))))
    expect(first.map((r) => [r.batchSize, r.batchReason])).toEqual(Array(3).fill([3, 'preferred']))
    const second = await Promise.all([b.submit(request([row(1), row(2)])), b.submit(request([row(3), row(4)]))])
    expect(second.map((r) => [r.batchSize, r.batchReason])).toEqual(Array(2).fill([4, 'delay']))
  })

  it('drops a request whose deadline passes in the queue, before it reaches the model', async () => {
    const sizes: number[] = []
    const b = batcher('delay', { maxBatchSize: 8, maxQueueDelayUs: 300_000 }, { batch: (size) => sizes.push(size), refused() {} })
    const late = b.submit(request([row(1)], performance.now() + 20))
    const onTime = b.submit(request([row(2)]))
    const error = await late.catch((e: unknown) => e)
    expect((error as InferenceError).status).toBe(504)
    expect((await onTime).batchSize).toBe(1)
    expect(sizes).toEqual([1])
  })
})
