import { createHash } from 'node:crypto'
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InferenceSession, Tensor } from 'onnxruntime-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { modelConfig } from '../../../backend/repository/model-config.ts'
import { buildComputeBoundModel } from '../../../tools/training/compute-bound.ts'

const run = async (file: string, rows: number, cols: number) => {
  const session = await InferenceSession.create(file, { intraOpNumThreads: 1 })
  try {
    const input = Float32Array.from({ length: rows * cols }, (_, i) => Math.sin(i))
    return (await session.run({ features: new Tensor('float32', input, [rows, cols]) })).probabilities
  } finally {
    await session.release()
  }
}

describe('buildComputeBoundModel', () => {
  let repository: string
  beforeAll(async () => {
    repository = await mkdtemp(join(tmpdir(), 'compute-bound-'))
  })
  afterAll(async () => {
    await rm(repository, { recursive: true, force: true })
  })

  it('writes a 64 → 1024 × 3 → 2 model that onnxruntime runs at any batch size', async () => {
    const model = await buildComputeBoundModel(repository)
    expect(model).toEqual({
      name: 'compute-bound',
      versionDir: join(repository, 'compute-bound', '1'),
      parameters: 64 * 1024 + 1024 + 2 * (1024 * 1024 + 1024) + 1024 * 2 + 2,
    })
    for (const rows of [1, 7, 64]) {
      const out = await run(join(model.versionDir, 'model.onnx'), rows, 64)
      expect(out.dims).toEqual([rows, 2])
      const p = out.data as Float32Array
      for (let r = 0; r < rows; r++) expect(p[2 * r] + p[2 * r + 1]).toBeCloseTo(1, 5)
    }
  })

  it('writes a config the server accepts and a MANIFEST that matches the model', async () => {
    const config = modelConfig.parse(JSON.parse(await readFile(join(repository, 'compute-bound', 'config.json'), 'utf8')))
    expect(config).toMatchObject({
      max_batch_size: 64,
      inputs: [{ name: 'features', datatype: 'FP32', dims: [64] }],
      outputs: [{ name: 'probabilities', datatype: 'FP32', dims: [2] }],
      dynamic_batching: { max_queue_delay_us: 2000, preferred_batch_sizes: [32, 64], max_queue_size: 4096, default_timeout_us: 0 },
    })
    const dir = join(repository, 'compute-bound', '1')
    expect((await readdir(dir)).sort()).toEqual(['MANIFEST', 'model.onnx'])
    const sum = createHash('sha256').update(await readFile(join(dir, 'model.onnx'))).digest('hex')
    expect(await readFile(join(dir, 'MANIFEST'), 'utf8')).toBe(`${sum}  model.onnx\n`)
  })

  it('honours the options and keeps preferred batch sizes within max_batch_size', async () => {
    const model = await buildComputeBoundModel(repository, { name: 'small', inputs: 5, hidden: [8], outputs: 3, seed: 9, maxBatchSize: 16 })
    expect(model.parameters).toBe(5 * 8 + 8 + 8 * 3 + 3)
    const out = await run(join(model.versionDir, 'model.onnx'), 4, 5)
    expect(out.dims).toEqual([4, 3])
    const config = modelConfig.parse(JSON.parse(await readFile(join(repository, 'small', 'config.json'), 'utf8')))
    expect(config.max_batch_size).toBe(16)
    expect(config.dynamic_batching?.preferred_batch_sizes).toEqual([])
    expect(config.postprocess?.labels).toEqual(['class_0', 'class_1', 'class_2'])
  })

  it('gives the same bytes for the same seed and different weights for another', async () => {
    // Same model name in separate repositories: the name is part of the graph's bytes.
    const bytes = async (subdir: string, seed: number) => {
      const model = await buildComputeBoundModel(join(repository, subdir), { name: 'seeded', inputs: 4, hidden: [6], seed })
      return readFile(join(model.versionDir, 'model.onnx'))
    }
    const [a, b, c] = [await bytes('a', 3), await bytes('b', 3), await bytes('c', 4)]
    expect(a.equals(b)).toBe(true)
    expect(a.equals(c)).toBe(false)
  })

  it('refuses a max batch size the config schema could not express', async () => {
    await expect(buildComputeBoundModel(repository, { name: 'unbatched', maxBatchSize: 0 })).rejects.toThrow(/maxBatchSize/)
  })
})
