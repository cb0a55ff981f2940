import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { post, startBackend, until, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'

let repo: FixtureRepository
let backend: BackendProcess
let url: string

const rowsOf = (count: number, width: number) => ({
  inputs: [{ name: 'features', shape: [count, width], datatype: 'FP32', data: Array.from({ length: count * width }, (_, i) => (i % 7) / 7) }],
})
const depth = async (model: string) => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const match = new RegExp(`edge_infer_backend_queue_depth_rows\\{model="${model}",version="1"\\} (\\d+)`).exec(text)
  return match ? Number(match[1]) : 0
}

beforeAll(async () => {
  repo = await createFixtureRepository({ withDemo: false })
  // Requests sit in this queue until their 10 s delay (Triton's timing): nothing fills a 1024-row batch.
  await repo.addModel('parked', {
    maxBatchSize: 1024,
    config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 10_000_000, preferred_batch_sizes: [], max_queue_size: 16 }),
  })
  await repo.addModel('timeout', {
    maxBatchSize: 1024,
    config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 10_000_000, max_queue_size: 16, default_timeout_us: 50_000 }),
  })
  // Compute-bound: a few thousand rows take a measurable while to drain.
  await repo.addModel('heavy', { inputs: 64, hidden: [1024, 1024, 1024] })
  backend = await startBackend({ MODEL_REPOSITORY: repo.root, MAX_REQUEST_ROWS: '8192' })
  url = backend.url
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

describe('admission control', () => {
  it('answers 504 for a request whose X-Request-Deadline-Ms passes while it waits', async () => {
    const res = await post<{ error: string }>(`${url}/v2/models/parked/infer`, rowsOf(1, 4), { 'x-request-deadline-ms': '50' })
    expect(res.status).toBe(504)
    expect(res.body.error).toMatch(/deadline expired after \d+ ms in the queue/)
  })

  it('applies the model default_timeout_us when the client names no deadline', async () => {
    const res = await post<{ error: string }>(`${url}/v2/models/timeout/infer`, rowsOf(1, 4))
    expect(res.status).toBe(504)
  })

  it('refuses with a permanent 413, not a 429, a request larger than the queue could ever hold, even when idle', async () => {
    const refused = await post<{ error: string }>(`${url}/v2/models/parked/infer`, rowsOf(17, 4))
    expect(refused.status).toBe(413)
    expect(refused.headers.get('retry-after')).toBeNull()
    expect(refused.body.error).toBe('request has 17 rows, more than this model version can ever queue (max_queue_size 16): send at most 16 rows per request')
    const metrics = await (await fetch(`${url}/metrics`)).text()
    expect(metrics).toMatch(/edge_infer_backend_rejected_requests_total\{model="parked",reason="too_many_rows"\} 1/)
  })

  it('refuses past max_queue_size with 429 and Retry-After, and still answers what it queued', async () => {
    const queued = Array.from({ length: 16 }, () => post(`${url}/v2/models/parked/infer`, rowsOf(1, 4)))
    await until(async () => (await depth('parked')) === 16)
    const refused = await post<{ error: string }>(`${url}/v2/models/parked/infer`, rowsOf(1, 4))
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/)
    expect(refused.body.error).toMatch(/queue full: 16 rows waiting, limit 16/)
    const metrics = await (await fetch(`${url}/metrics`)).text()
    expect(metrics).toMatch(/edge_infer_backend_rejected_requests_total\{model="parked",reason="queue_full"\} 1/)
    // Reloading drains the queue at once: the parked requests are answered, not dropped.
    await backend.stop()
    const statuses = (await Promise.all(queued)).map((r) => r.status)
    expect(statuses).toEqual(Array(16).fill(200))
    backend = await startBackend({ MODEL_REPOSITORY: repo.root, MAX_REQUEST_ROWS: '8192' })
    url = backend.url
  })

  it('refuses at admission a request that cannot start before its deadline, judged from the measured drain rate', async () => {
    expect((await post(`${url}/v2/models/heavy/infer`, rowsOf(64, 64))).status).toBe(200)
    const backlog = post(`${url}/v2/models/heavy/infer`, rowsOf(4000, 64))
    await until(async () => (await depth('heavy')) >= 1000, { tries: 2000, everyMs: 1 })
    const refused = await post<{ error: string }>(`${url}/v2/models/heavy/infer`, rowsOf(1, 64), { 'x-request-deadline-ms': '2' })
    expect(refused.status).toBe(429)
    expect(refused.body.error).toMatch(/deadline cannot be met: predicted wait \d+ ms \(\d+ rows ahead at \d+ rows\/s\)/)
    expect((await backlog).status).toBe(200)
  })
})
