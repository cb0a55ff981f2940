import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { post, startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { writeHalfIdentityModel } from '../support/half-model.ts'

let repo: FixtureRepository
let backend: BackendProcess

beforeAll(async () => {
  repo = await createFixtureRepository({ withDemo: false })
  await writeHalfIdentityModel(repo.root, 'half')
  backend = await startBackend({ MODEL_REPOSITORY: repo.root })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

const echo = (data: unknown[]) =>
  post<{ outputs: Array<{ datatype: string; data: number[] }>; error: string }>(`${backend.url}/v2/models/half/infer`, {
    inputs: [{ name: 'values', shape: [data.length / 4, 4], datatype: 'FP16', data }],
  })

describe('FP16 tensors through a real onnxruntime session', () => {
  it('round-trip as IEEE half precision, rounded to nearest even, subnormals and signed zero included', async () => {
    const sent = [1, 2, 1.5, -1, 0.1, 65_504, 2 ** -24, -0, 2 ** -25, 3 * 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11]
    const res = await echo(sent)
    expect(res.status).toBe(200)
    expect(res.body.outputs[0]!.datatype).toBe('FP16')
    // JSON has no -0; 2^-25 ties to 0 (even), 3·2^-25 to 2^-23, 1 + 2^-11 to 1, 1 + 3·2^-11 to 1 + 2^-9.
    expect(res.body.outputs[0]!.data).toEqual([1, 2, 1.5, -1, 0.0999755859375, 65_504, 2 ** -24, 0, 0, 2 ** -23, 1, 1 + 2 ** -9])
  })

  it('refuses values past the half range, and non-finite ones', async () => {
    const tooLarge = await echo([70_000, 0, 0, 0])
    expect(tooLarge.status).toBe(400)
    expect(tooLarge.body.error).toBe('input "values": data[0] is number 70000, expected a number within FP16 range (±65504)')
    for (const bad of ['NaN', 'Infinity', '-Infinity']) {
      const res = await echo([0, bad, 0, 0])
      expect(res.status).toBe(400)
      expect(res.body.error).toMatch(/^input "values": data\[1\] is .*, expected a finite number$/)
    }
  })
})
