import { readFile } from 'node:fs/promises'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { modelConfig } from '../../../backend/repository/model-config.ts'
import { ModelCatalog, predictable } from '../../../edge/backend-client/catalog.ts'
import type { BackendModelMetadata, Transport } from '../../../edge/backend-client/transport.ts'
import { Problem } from '../../../edge/problem.ts'

const describing = (metadata: Partial<BackendModelMetadata>): Transport => ({
  name: 'fake',
  infer: () => Promise.reject(new Error('not called')),
  models: () => Promise.resolve(['m']),
  metadata: async () => ({ name: 'm', platform: 'onnxruntime', inputs: [], outputs: [], versions: ['2', '1'], ...metadata }),
})

afterEach(() => vi.restoreAllMocks())

describe('ModelCatalog for a model without a feature spec', () => {
  it('describes it by its versions, and predictable() refuses it naming the infer route', async () => {
    const model = await new ModelCatalog({ transport: describing({}) }).describe('m', 'r-1')
    expect(model).toEqual({ name: 'm', versions: [1, 2] })
    const refusal = (() => {
      try {
        return predictable(model)
      } catch (err) {
        return err
      }
    })()
    expect(refusal).toBeInstanceOf(Problem)
    expect(refusal).toMatchObject({ status: 404, type: expect.stringMatching(/\/no-feature-spec$/), detail: expect.stringContaining('/v2/models/m/infer') })
  })

  it('warns when the backend serves a feature spec it cannot read, and leaves it out', async () => {
    const warn = vi.spyOn(console, 'error').mockImplementation(() => {})
    const model = await new ModelCatalog({ transport: describing({ features: { input: 'x' } }) }).describe('m', 'r-2')
    expect(model).not.toHaveProperty('spec')
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('feature spec or postprocess the edge cannot read'))
  })

  it('says nothing for a model that simply has none', async () => {
    const warn = vi.spyOn(console, 'error').mockImplementation(() => {})
    await new ModelCatalog({ transport: describing({}) }).describe('m', 'r-3')
    expect(warn).not.toHaveBeenCalled()
  })
})

describe('ModelCatalog reading what the backend serves', () => {
  it('takes the postprocess and feature spec of a real config.json as the backend parsed them', async () => {
    const config = modelConfig.parse(JSON.parse(await readFile(new URL('../../../models/credit-risk/config.json', import.meta.url), 'utf8')))
    const served = { features: config.features, postprocess: config.postprocess }
    const model = await new ModelCatalog({ transport: describing(served) }).describe('m', 'r-4')
    expect(model.postprocess).toEqual(config.postprocess)
    expect(model.spec).toEqual(config.features)
  })

  it('takes the feedback block the backend serves, and warns of one it cannot read (feedback then follows FEEDBACK_MODELS)', async () => {
    const feedback = { ttl_seconds: 3_600, labels: ['repaid', 'defaulted'] }
    expect((await new ModelCatalog({ transport: describing({ feedback }) }).describe('m', 'r-5')).feedback).toEqual(feedback)
    const warn = vi.spyOn(console, 'error').mockImplementation(() => {})
    const model = await new ModelCatalog({ transport: describing({ feedback: { ttl_seconds: -1 } }) }).describe('m', 'r-6')
    expect(model).not.toHaveProperty('feedback')
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('feedback block the edge cannot read'))
  })
})

/** A transport whose metadata calls wait until the test answers them, each noting the deadline it was given. */
const held = () => {
  const calls: Array<{ deadlineAt?: number; answer: () => void; fail: (err: unknown) => void }> = []
  const transport: Transport = {
    name: 'held',
    infer: () => Promise.reject(new Error('not called')),
    models: () => Promise.resolve(['m']),
    metadata: (_model, _requestId, deadlineAt) =>
      new Promise((resolve, reject) => {
        calls.push({ deadlineAt, answer: () => resolve({ name: 'm', platform: 'onnxruntime', inputs: [], outputs: [], versions: ['1'] }), fail: reject })
      }),
  }
  return { calls, transport }
}

describe('ModelCatalog within the caller\'s deadline', () => {
  const NOW = 1_000_000
  afterEach(() => vi.useRealTimers())

  it('gives a fetch the deadline of the request that starts it, and shares it with those it covers', async () => {
    const { calls, transport } = held()
    const catalog = new ModelCatalog({ transport, fetchBoundMs: 5_000, now: () => NOW })
    const first = catalog.describe('m', 'r-1', { deadlineAt: NOW + 9_000 })
    // The first fetch runs the whole bound (5 s): a later request with any deadline shares it.
    const second = catalog.describe('m', 'r-2', { deadlineAt: NOW + 20_000 })
    expect(calls.map((c) => c.deadlineAt)).toEqual([NOW + 9_000])
    calls[0].answer()
    expect(await first).toEqual(await second)
  })

  it('starts its own fetch for a request that would outlast a fetch begun with less time, and answers it', async () => {
    const { calls, transport } = held()
    const catalog = new ModelCatalog({ transport, fetchBoundMs: 5_000, now: () => NOW })
    const hurried = catalog.describe('m', 'r-1', { deadlineAt: NOW + 300 })
    const patient = catalog.describe('m', 'r-2', { deadlineAt: NOW + 2_000 })
    expect(calls.map((c) => c.deadlineAt)).toEqual([NOW + 300, NOW + 2_000])
    calls[0].fail(new Problem(504, 'Gateway Timeout', 'spent'))
    calls[1].answer()
    await expect(hurried).rejects.toMatchObject({ status: 504 })
    expect((await patient).versions).toEqual([1])
  })

  it('stops waiting at the caller\'s deadline on a fetch another request started (504), which goes on for the others', async () => {
    vi.useFakeTimers({ now: NOW })
    const { calls, transport } = held()
    const catalog = new ModelCatalog({ transport, fetchBoundMs: 5_000, now: () => Date.now() })
    const patient = catalog.describe('m', 'r-1', { deadlineAt: NOW + 5_000 })
    const hurried = catalog.describe('m', 'r-2', { deadlineAt: NOW + 300 })
    const outcome = hurried.catch((err: unknown) => err)
    await vi.advanceTimersByTimeAsync(300)
    expect(await outcome).toMatchObject({ status: 504, detail: expect.stringMatching(/within the request's deadline/) })
    calls[0].answer()
    expect((await patient).versions).toEqual([1])
    expect(calls).toHaveLength(1)
  })

  it('fetches again for a caller that needs a description newer than the cached one', async () => {
    const { calls, transport } = held()
    let now = NOW
    const catalog = new ModelCatalog({ transport, now: () => now })
    const cold = catalog.describe('m', 'r-1')
    calls[0].answer()
    await cold
    now = NOW + 100
    expect(catalog.describe('m', 'r-2', { since: NOW })).toBe(catalog.describe('m', 'r-3'))
    expect(calls).toHaveLength(1)
    const newer = catalog.describe('m', 'r-4', { since: NOW + 50 })
    expect(calls).toHaveLength(2)
    // A second caller that needs the same shares the fetch just started.
    catalog.describe('m', 'r-5', { since: NOW + 50 })
    expect(calls).toHaveLength(2)
    calls[1].answer()
    await newer
  })
})
