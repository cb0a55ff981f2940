import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { writeRowSumModel } from '../support/row-sum-model.ts'

/**
 * A model with a variable inner dimension behind the real server, under `delay` dispatch so that
 * requests of different lengths meet in the queue: they arrive within one queue delay, so a batcher that mixed them would either fail to concatenate
 * (and, from its timer, crash the process) or hand rows to the wrong callers.
 */
let repo: FixtureRepository
let backend: BackendProcess

beforeAll(async () => {
  repo = await createFixtureRepository({ withDemo: false })
  // A generous delay, so requests sent together meet in the queue on a loaded machine too; three
  // rows of one shape leave at once as a preferred batch instead of waiting it out.
  await writeRowSumModel(repo.root, 'row-sum', 1_000_000)
  await repo.editConfig('row-sum', (config) => Object.assign(config.dynamic_batching as Record<string, unknown>, { dispatch: 'delay', preferred_batch_sizes: [3] }))
  backend = await startBackend({ MODEL_REPOSITORY: repo.root })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

type Infer = { parameters: { batch_size: number; batch_reason: string }; outputs: Array<{ shape: number[]; data: number[] }> }

/** One request of one row: 1, 10, 100, ... up to `length` values, so each length has its own sum. */
const sumOf = (length: number) =>
  post<Infer>(`${backend.url}/v2/models/row-sum/infer`, {
    inputs: [{ name: 'values', shape: [1, length], datatype: 'FP32', data: Array.from({ length }, (_, i) => (i === length - 1 ? 10 ** (length - 3) : 1)) }],
  })

const expected = (length: number) => length - 1 + 10 ** (length - 3)

describe('variable inner dimensions', () => {
  it('batches only requests of the same shape: each caller gets its own sum and the process lives', async () => {
    await sumOf(3) // loads the model lazily, so the next requests meet in the queue
    for (const lengths of [[3, 5], [5, 3, 4], [4, 4, 3, 5, 5]]) {
      const answers = await Promise.all(lengths.map(sumOf))
      expect(answers.map((a) => a.status)).toEqual(lengths.map(() => 200))
      expect(answers.map((a) => a.body.outputs[0]!.data[0])).toEqual(lengths.map(expected))
      expect(answers.map((a) => a.body.outputs[0]!.shape)).toEqual(lengths.map(() => [1, 1]))
    }
    // Same-length requests still share a batch.
    const same = await Promise.all([4, 4, 4].map(sumOf))
    expect(same.map((a) => [a.body.parameters.batch_size, a.body.parameters.batch_reason])).toEqual(Array(3).fill([3, 'preferred']))
    expect(backend.child.exitCode).toBeNull()
  })
})
