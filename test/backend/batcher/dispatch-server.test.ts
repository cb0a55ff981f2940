import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'

/** Both dispatch policies behind the real server: one model left at the default, one on Triton's delay. */
let repo: FixtureRepository
let backend: BackendProcess

const DELAY_US = 20_000

beforeAll(async () => {
  repo = await createFixtureRepository({ withDemo: false })
  await repo.addModel('tiny')
  await repo.addModel('tiny-delay', { config: (c) => Object.assign(c.dynamic_batching as Record<string, unknown>, { dispatch: 'delay', max_queue_delay_us: DELAY_US }) })
  backend = await startBackend({ MODEL_REPOSITORY: repo.root })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

type Infer = { parameters: { batch_size: number; batch_reason: string; queue_us: number } }

const infer = (model: string, i = 1) =>
  post<Infer>(`${backend.url}/v2/models/${model}/infer`, { inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data: [i, -i, i / 2, 1] }] })

/** `edge_infer_backend_batches_total` of one model, by reason. */
const batchesByReason = async (model: string): Promise<Record<string, number>> => {
  const text = await (await fetch(`${backend.url}/metrics`)).text()
  const counts: Record<string, number> = {}
  for (const [, labels, value] of text.matchAll(/^edge_infer_backend_batches_total\{([^}]*)\} (\S+)$/gm)) {
    if (!labels!.includes(`model="${model}"`)) continue
    counts[/reason="([^"]+)"/.exec(labels!)![1]!] = Number(value)
  }
  return counts
}

describe('dispatch policies in the real backend', () => {
  it('answers a request to an idle backend at once, explained as an idle batch in the response and the metric', async () => {
    await infer('tiny') // loads the model lazily
    const before = (await batchesByReason('tiny')).idle ?? 0
    const res = await infer('tiny')
    expect(res.status).toBe(200)
    expect(res.body.parameters).toMatchObject({ batch_size: 1, batch_reason: 'idle' })
    expect((await batchesByReason('tiny')).idle).toBe(before + 1)
  })

  it('keeps Triton timing for a model configured with dispatch "delay": a lone request waits out the delay', async () => {
    await infer('tiny-delay')
    const res = await infer('tiny-delay')
    expect(res.body.parameters).toMatchObject({ batch_size: 1, batch_reason: 'delay' })
    expect(res.body.parameters.queue_us).toBeGreaterThanOrEqual(DELAY_US)
  })

  it('forms batches of more than one row from concurrent requests while the instance is busy', async () => {
    let largest = 0
    // Bounded: 64 requests at once on one instance share batches within a round or two.
    for (let round = 0; round < 10 && largest < 2; round++) {
      const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => infer('tiny', i)))
      expect(answers.map((a) => a.status)).toEqual(Array(64).fill(200))
      largest = Math.max(...answers.map((a) => a.body.parameters.batch_size))
    }
    expect(largest).toBeGreaterThan(1)
  })
})
