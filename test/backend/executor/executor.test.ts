import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Executor } from '../../../backend/executor/executor.ts'
import { sha256 } from '../../../backend/repository/manifest.ts'
import { buildComputeBoundModel } from '../../../tools/training/compute-bound.ts'

let dir: string
let modelPath: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'executor-'))
  const model = await buildComputeBoundModel(dir, { name: 'tiny', inputs: 4, hidden: [8], outputs: 2 })
  modelPath = join(model.versionDir, 'model.onnx')
})

afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('Executor', () => {
  it('starts instance_count threads, each with its own copy of the verified bytes, and runs on all of them at once', async () => {
    const executor = await Executor.start({ modelPath, modelSha256: sha256(await readFile(modelPath)), executionProviders: ['cpu'], intraOpThreads: 1, instanceCount: 3 })
    try {
      expect([executor.size, executor.idle]).toEqual([3, 3])
      const feeds = { features: { datatype: 'FP32' as const, dims: [1, 4], data: Float32Array.of(1, 2, 3, 4) } }
      const runs = await Promise.all([0, 1, 2].map(() => executor.run(feeds, ['probabilities'])))
      expect(runs.map((r) => r.outputs.probabilities!.dims)).toEqual([[1, 2], [1, 2], [1, 2]])
    } finally {
      await executor.close()
    }
  })

  it('refuses a model file that does not hash to its MANIFEST line', async () => {
    await expect(Executor.start({ modelPath, modelSha256: '0'.repeat(64), executionProviders: ['cpu'], intraOpThreads: 1, instanceCount: 1 })).rejects.toThrow(/changed since its version was verified/)
  })
})
