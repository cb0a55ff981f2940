import { describe, expect, it } from 'vitest'
import { ModelManager } from '../../backend/loader/model-manager.ts'
import { createLogger } from '../../backend/logger.ts'
import { Repository } from '../../backend/repository/repository.ts'
import { post, startBackend, until } from './support/backend-process.ts'
import { DEMO_REPOSITORY, createFixtureRepository } from './support/fixture-repository.ts'

const depth = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const match = /^edge_infer_backend_queue_depth_all_rows (\d+)$/m.exec(text)
  // A renamed or missing gauge must fail here, not read as an empty queue.
  if (!match) throw new Error('edge_infer_backend_queue_depth_all_rows is not in /metrics')
  return Number(match[1])
}

describe('graceful shutdown', () => {
  it('is ready only once the pinned models are warm, and not from the moment shutdown begins, which refuses new work with 503', async () => {
    const manager = new ModelManager(new Repository(DEMO_REPOSITORY), { batching: true, memoryBudgetBytes: 1 << 30, logger: createLogger('silent') })
    expect(manager.ready()).toBe(false)
    const starting = manager.start()
    expect(manager.ready()).toBe(false)
    await starting
    expect(manager.ready()).toBe(true)
    const stopping = manager.shutdown()
    expect(manager.ready()).toBe(false)
    await expect(manager.resolve('credit-risk')).rejects.toMatchObject({ status: 503, message: 'server is shutting down' })
    await stopping
  })

  it('on SIGTERM answers every accepted request, exits 0 and stops listening', async () => {
    const repo = await createFixtureRepository({ withDemo: false })
    await repo.addModel('parked', {
      maxBatchSize: 1024,
      config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 30_000_000, max_queue_size: 4096 }),
    })
    const backend = await startBackend({ MODEL_REPOSITORY: repo.root, SHUTDOWN_GRACE_MS: '20000' })
    try {
      const body = { inputs: [{ name: 'features', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 5, 6, 7, 8] }] }
      const accepted = Array.from({ length: 100 }, () => post(`${backend.url}/v2/models/parked/infer`, body))
      await until(async () => (await depth(backend.url)) === 200)

      backend.child.kill('SIGTERM')
      const results = await Promise.all(accepted)
      expect(results.map((r) => r.status)).toEqual(Array(100).fill(200))
      expect(await backend.exited).toBe(0)
      const messages = backend.logs.map((l) => l.msg)
      expect(messages.indexOf('shutting down')).toBeGreaterThan(-1)
      expect(messages.indexOf('stopped')).toBeGreaterThan(messages.indexOf('shutting down'))
      await expect(fetch(`${backend.url}/v2/health/live`)).rejects.toThrow()
    } finally {
      await backend.stop()
      await repo.remove()
    }
  })
})
