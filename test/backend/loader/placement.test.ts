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
    const main = await start('tiny', { placement: 'auto', mainThreadMaxUs: 10_000_000 })
    const threads = await start('tiny', { placement: 'auto', mainThreadMaxUs: 0 })
    expect([main.placement, main.size]).toEqual(['main', 1])
    expect(threads.placement).toBe('worker')
    const [a, b] = await Promise.all([main.run(feeds, ['probabilities']), threads.run(feeds, ['probabilities'])])
    expect(a.outputs.probabilities!.dims).toEqual([2, 2])
    expect(Array.from(a.outputs.probabilities!.data as Float32Array)).toEqual(Array.from(b.outputs.probabilities!.data as Float32Array))
  })

  it('keeps FP16 models and substitute worker entries on threads whatever the setting', async () => {
    expect((await start('half', { placement: 'main' })).placement).toBe('worker')
    const substitute = new URL('../support/crashing-worker.ts', import.meta.url)
    expect((await start('tiny', { placement: 'main', workerUrl: substitute })).placement).toBe('worker')
  })

  it('on the main thread, the instance takes work once per loop turn: not idle while the turn reads, free when it ends', async () => {
    const executor = await start('tiny', { placement: 'main' })
    let freed = 0
    executor.watch({ restored: () => freed++, failed() {} })
    expect([executor.idle, executor.idle]).toEqual([0, 0])
    await new Promise((resolve) => setImmediate(resolve))
    expect(freed).toBe(1)
    // Asked at the turn's end (as the batcher does when told), it takes work and runs it at once.
    let ran: number[] = []
    executor.watch({
      restored: () => {
        ran = [executor.idle]
        void executor.run(feeds, ['probabilities'])
        ran.push(executor.idle)
      },
      failed() {},
    })
    expect(executor.idle).toBe(0)
    await new Promise((resolve) => setImmediate(resolve))
    expect(ran).toEqual([1, 1])
  })

  it('a tensor that views part of a larger buffer runs as its own copy does, on either thread', async () => {
    const shared = new Float32Array(64)
    const view = shared.subarray(24, 32)
    view.set(feeds.features.data)
    const offset = { features: { ...feeds.features, data: view } }
    for (const placement of ['main', 'worker'] as const) {
      const executor = await start('tiny', { placement })
      const [a, b] = [await executor.run(offset, ['probabilities']), await executor.run(feeds, ['probabilities'])]
      expect(Array.from(a.outputs.probabilities!.data as Float32Array)).toEqual(Array.from(b.outputs.probabilities!.data as Float32Array))
    }
  })

  it('a run that fails rejects on the main thread as on a thread, and leaves the instance free', async () => {
    for (const placement of ['main', 'worker'] as const) {
      const executor = await start('tiny', { placement })
      await expect(executor.run(feeds, ['nonexistent'])).rejects.toThrow(/no output "nonexistent"|invalid output name|nonexistent/)
      await new Promise((resolve) => setImmediate(resolve))
      await expect(executor.run(feeds, ['probabilities'])).resolves.toMatchObject({ outputs: { probabilities: { dims: [2, 2] } } })
    }
  })
})
