import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../edge/auth/api-key.ts'
import { startWorker, type RunningWorker } from '../support/workerd.ts'

let worker: RunningWorker
const admin = generateApiKey('test')

beforeAll(async () => {
  const entry = { name: 'ops', hash: await hashApiKey(admin), scopes: ['admin'], rate_limit_per_minute: 600 }
  // No backend: nothing here reaches it.
  worker = await startWorker({ BACKEND_URL: 'http://127.0.0.1:9', API_KEYS: JSON.stringify([entry]) })
})

afterAll(async () => {
  await worker?.dispose()
})

describe('the bundled worker in workerd', () => {
  it('runs the Cron Trigger handler, which skips the tick with a log line while no monitor source is configured', async () => {
    const result = await (await worker.mf.getWorker()).scheduled({ cron: '* * * * *' })
    expect(result.outcome).toBe('ok')
    expect(worker.logs.some((l) => l.includes('scheduled tick skipped: no monitor source configured'))).toBe(true)
  })

  it('serves the rollout history to admin keys only', async () => {
    const res = await fetch(`${worker.url}/v1/models/credit-risk/rollout/history`, { headers: { authorization: `Bearer ${admin}` } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ model: 'credit-risk', entries: [] })
    expect((await fetch(`${worker.url}/v1/models/credit-risk/rollout/history`)).status).toBe(401)
  })
})
