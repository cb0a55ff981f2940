import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { until } from '../../backend/support/backend-process.ts'
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
  it('runs the Cron Trigger handler, whose failing tick (no backend to list the models) is logged and does not fail the event', async () => {
    const result = await (await worker.mf.getWorker()).scheduled({ cron: '* * * * *' })
    expect(result.outcome).toBe('ok')
    // workerd's stdout reaches the test on its own schedule.
    await until(() => worker.logs.some((l) => l.includes('scheduled tick')))
    expect(worker.logs.filter((l) => l.includes('scheduled tick')), worker.logs.join('\n')).toEqual([expect.stringContaining('"msg":"scheduled tick failed"')])
  })

  it('serves the rollout history to admin keys only', async () => {
    const res = await fetch(`${worker.url}/v1/models/credit-risk/rollout/history`, { headers: { authorization: `Bearer ${admin}` } })
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ model: 'credit-risk', entries: [] })
    expect((await fetch(`${worker.url}/v1/models/credit-risk/rollout/history`)).status).toBe(401)
  })
})
