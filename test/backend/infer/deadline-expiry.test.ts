import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DriftReport } from '../../../backend/monitor/drift/report.ts'
import { generateApplicants } from '../../../tools/training/applicants.ts'
import { encodeRows } from '../../../tools/training/dataset.ts'
import { CREDIT_SPEC } from '../support/applicants.ts'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { HttpTransport, Unanswered } from '../../../edge/backend-client/http.ts'
import { HEADERS } from '../../../shared/headers.ts'

let repo: FixtureRepository
let backend: BackendProcess

beforeAll(async () => {
  repo = await createFixtureRepository()
  // Requests wait in the queue until a 10 s delay: nothing fills a batch, so each one expires at its deadline.
  await repo.editConfig('credit-risk', (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 10_000_000, preferred_batch_sizes: [], max_queue_size: 4096, default_timeout_us: 50_000 }))
  backend = await startBackend({ MODEL_REPOSITORY: repo.root })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

const applicant = () => encodeRows(CREDIT_SPEC, generateApplicants(1, 7).applicants)

const infer = (headers: Record<string, string> = {}) => {
  const x = applicant()
  return post<{ error: string }>(`${backend.url}/v2/models/credit-risk/versions/2/infer`, { inputs: [{ name: 'features', shape: [x.rows, x.cols], datatype: 'FP32', data: Array.from(x.data) }] }, headers)
}

describe('a request that expires in the queue', () => {
  it("is left to the caller to count when it expired at the caller's deadline, and counted here when at the model's default", async () => {
    const callers = await infer({ 'x-request-deadline-ms': '50' })
    expect(callers.status).toBe(504)
    expect(callers.body.error).toMatch(/deadline expired after \d+ ms in the queue/)
    const own = await infer()
    expect(own.status).toBe(504)
    const res = await fetch(`${backend.url}/v2/models/credit-risk/versions/2/drift?window=15m`)
    const { health } = (await res.json()) as DriftReport
    // The edge counts the first (it gave up at that deadline): one request, one error here.
    expect(health).toMatchObject({ requests: 1, errors: 1 })
  })

  it("reaches the edge as a call left unanswered (which the edge counts), when the backend's 504 comes before the edge's own timer", async () => {
    // The deadline the backend is told is cut to 30 ms while the edge waits 5 s: the backend's expiry answers first.
    const transport = new HttpTransport({
      baseUrl: backend.url,
      retries: 0,
      fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), [HEADERS.deadlineMs]: '30' } }),
    })
    const x = applicant()
    const call = transport.infer({ model: 'credit-risk', version: 2, requestId: 'expired-in-queue-1', deadlineAt: Date.now() + 5_000, request: { inputs: [{ name: 'features', shape: [x.rows, x.cols], datatype: 'FP32', data: Array.from(x.data) }] } })
    const refusal = await call.then(() => undefined, (err: unknown) => err)
    expect(refusal).toBeInstanceOf(Unanswered)
    expect((refusal as Unanswered).detail).toMatch(/deadline expired after \d+ ms in the queue/)
  })
})
