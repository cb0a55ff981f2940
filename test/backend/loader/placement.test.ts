import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Executor } from '../../../backend/executor/executor.ts'
import { startExecutor, type PlacementOptions } from '../../../backend/loader/placement.ts'
import { Repository } from '../../../backend/repository/repository.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { writeHalfIdentityModel } from '../support/half-model.ts'

let repo: FixtureRepository
const started: Executor[] = []

beforeAll(async () => {
  repo = await createFixtureRepository({ withDemo: false })
  await repo.addModel('tiny')
  await writeHalfIdentityModel(repo.root, 'half')
})

afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.close()))
})

afterAll(async () => {
  await repo?.remove()
})

const start = async (model: string, options: PlacementOptions): Promise<Executor> => {
  const disk = (await new Repository(repo.root).read(model))!
  if (!disk.config) throw new Error(disk.error)
  const executor = await startExecutor(model, disk.config, disk.versions[0]!, options)
  started.push(executor)
  return executor
}

const feeds = { features: { datatype: 'FP32' as const, dims: [2, 4], data: Float32Array.of(0.5, -1, 2, 0.25, 3, 1, -2, 0) } }

describe('where a version runs its sessions', () => {
  it('auto: the main thread when the largest batch runs within the bound, threads when it does not; both answer alike', async () => {
    const main = await start('tiny', { batching: true, placement: 'auto', mainThreadMaxUs: 10_000_000 })
    const threads = await start('tiny', { batching: true, placement: 'auto', mainThreadMaxUs: 0 })
    expect([main.placement, main.size]).toEqual(['main', 1])
    expect(threads.placement).toBe('worker')
    const [a, b] = await Promise.all([main.run(feeds, ['probabilities']), threads.run(feeds, ['probabilities'])])
    expect(a.outputs.probabilities!.dims).toEqual([2, 2])
    expect(Array.from(a.outputs.probabilities!.data as Float32Array)).toEqual(Array.from(b.outputs.probabilities!.data as Float32Array))
  })

  it('keeps FP16 models and substitute worker entries on threads whatever the setting', async () => {
    expect((await start('half', { batching: true, placement: 'main' })).placement).toBe('worker')
    const substitute = new URL('../support/crashing-worker.ts', import.meta.url)
    expect((await start('tiny', { batching: true, placement: 'main', workerUrl: substitute })).placement).toBe('worker')
  })

  it('on the main thread with batching, a run waits for the loop turn to end and the instance is busy until then', async () => {
    const executor = await start('tiny', { batching: true, placement: 'main' })
    let done = false
    const run = executor.run(feeds, ['probabilities']).then(() => (done = true))
    await Promise.resolve()
    expect([done, executor.idle]).toEqual([false, 0])
    await run
    expect(executor.idle).toBe(1)
  })

  it('on the main thread without batching, a request runs when it is dispatched', async () => {
    const executor = await start('tiny', { batching: false, placement: 'main' })
    let done = false
    const run = executor.run(feeds, ['probabilities']).then(() => (done = true))
    expect(executor.idle).toBe(1)
    await Promise.resolve()
    expect(done).toBe(true)
    await run
  })

  it('a tensor that views part of a larger buffer runs as its own copy does, on either thread', async () => {
    const shared = new Float32Array(64)
    const view = shared.subarray(24, 32)
    view.set(feeds.features.data)
    const offset = { features: { ...feeds.features, data: view } }
    for (const placement of ['main', 'worker'] as const) {
      const executor = await start('tiny', { batching: true, placement })
      const [a, b] = [await executor.run(offset, ['probabilities']), await executor.run(feeds, ['probabilities'])]
      expect(Array.from(a.outputs.probabilities!.data as Float32Array)).toEqual(Array.from(b.outputs.probabilities!.data as Float32Array))
    }
  })

  it('a run that fails rejects on the main thread as on a thread', async () => {
    for (const batching of [true, false]) {
      const executor = await start('tiny', { batching, placement: 'main' })
      await expect(executor.run(feeds, ['nonexistent'])).rejects.toThrow(/no output "nonexistent"/)
      expect(executor.idle).toBe(1)
    }
  })
})
