import { readFile } from 'node:fs/promises'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { modelConfig } from '../../../../backend/repository/model-config.ts'
import { ModelCatalog, predictable } from '../../../../edge/pipeline/model/catalog.ts'
import type { BackendModelMetadata, Transport } from '../../../../edge/pipeline/forward/transport.ts'
import { Problem } from '../../../../edge/problem.ts'

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
    const config = modelConfig.parse(JSON.parse(await readFile(new URL('../../../../models/credit-risk/config.json', import.meta.url), 'utf8')))
    const served = { features: config.features, postprocess: config.postprocess }
    const model = await new ModelCatalog({ transport: describing(served) }).describe('m', 'r-4')
    expect(model.postprocess).toEqual(config.postprocess)
    expect(model.spec).toEqual(config.features)
  })
})
