import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startWorker, type RunningWorker } from './support/workerd.ts'

let worker: RunningWorker

beforeAll(async () => {
  worker = await startWorker({ BACKEND_URL: 'http://127.0.0.1:9' })
})

afterAll(async () => {
  await worker?.dispose()
})

describe('the bundled worker in workerd', () => {
  it('serves and answers problems in the same shape as in Node', async () => {
    const health = await fetch(`${worker.url}/healthz`)
    expect(health.status).toBe(200)
    const missing = await fetch(`${worker.url}/nope`)
    expect(missing.status).toBe(404)
    expect(missing.headers.get('content-type')).toBe('application/problem+json')
    expect(await missing.json()).toMatchObject({ status: 404, title: 'Not Found' })
  })
})
