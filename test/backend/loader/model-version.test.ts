import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { InferenceError } from '../../../backend/errors.ts'
import { ModelVersion } from '../../../backend/loader/model-version.ts'
import { Repository } from '../../../backend/repository/repository.ts'
import { CRASH_VALUE } from '../support/crashing-worker.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'

/**
 * A version whose only inference thread dies: the real worker in a thread that a test can kill
 * (`support/crashing-worker.ts`), so the executor has to replace it as it would after a crash.
 */
let repo: FixtureRepository | undefined
let version: ModelVersion | undefined

afterEach(async () => {
  await version?.retire()
  await repo?.remove()
  version = repo = undefined
})

const loadTiny = async () => {
  repo = await createFixtureRepository({ withDemo: false })
  await repo.addModel('tiny', { config: (c) => Object.assign(c.dynamic_batching as Record<string, unknown>, { max_queue_delay_us: 0, dispatch: 'delay' }) })
  await repo.addModel('other', { seed: 7 })
  const disk = (await new Repository(repo.root).read('tiny'))!
  if (!disk.config) throw new Error(disk.error)
  const logged: string[] = []
  const logger = { error: (msg: string) => logged.push(msg), warn() {}, info() {}, debug() {} }
  version = await ModelVersion.load('tiny', disk.config, disk.versions[0]!, { batching: true, logger: logger as never, workerUrl: new URL('../support/crashing-worker.ts', import.meta.url) })
  return { version, logged, root: repo.root }
}

const request = (first: number) => ({ inputs: { features: { datatype: 'FP32' as const, dims: [1, 4], data: Float32Array.from([first, 1, 2, 3]) } }, rows: 1, outputs: ['probabilities'] })

describe('a version whose inference thread dies', () => {
  it('answers the requests queued behind the crash once the replacement is ready', async () => {
    const { version } = await loadTiny()
    const crashed = version.submit(request(CRASH_VALUE))
    // Queued while the only instance is busy with the batch that kills it; no deadline to rescue it.
    const queued = version.submit(request(0.5))
    await expect(crashed).rejects.toMatchObject({ status: 500 })
    const answer = await queued
    expect(answer.outputs.probabilities!.dims).toEqual([1, 2])
    expect((await version.submit(request(0.25))).batchSize).toBe(1)
  })

  it('does not start a model file that changed on disk: the version turns unavailable, its queue gets 503, retiring it does not hang', async () => {
    const { version, logged, root } = await loadTiny()
    await copyFile(join(root, 'other', '1', 'model.onnx'), join(root, 'tiny', '1', 'model.onnx'))
    const crashed = version.submit(request(CRASH_VALUE))
    const queued = version.submit(request(0.5))
    await expect(crashed).rejects.toMatchObject({ status: 500 })
    const refusal = (await queued.catch((e: unknown) => e)) as InferenceError
    expect(refusal.status).toBe(503)
    expect(refusal.message).toBe('model "tiny" version 1 is not ready')
    expect(version.ready).toBe(false)
    expect(version.broken).toMatch(/changed since its version was verified/)
    await expect(version.submit(request(0.25))).rejects.toMatchObject({ status: 503 })
    expect(logged).toContain('inference instance could not be replaced')
  })
})
