import { describe, expect, it, vi } from 'vitest'
import { DATATYPES, type Datatype } from '../../../shared/datatypes.ts'
import { parseInferRequest } from '../../../backend/infer/request.ts'
import { modelConfig } from '../../../backend/repository/model-config.ts'

// The real allocator, watched: a refused request must not have allocated its declared shape.
const allocations = vi.hoisted(() => [] as number[])
vi.mock(import('../../../backend/executor/tensor.ts'), async (original) => {
  const real = await original()
  return {
    ...real,
    allocateCarved: (datatype: Datatype, length: number) => {
      allocations.push(length)
      return real.allocateCarved(datatype, length)
    },
  }
})

const LIMITS = { maxRows: 64, maxElements: 8 * 1024 * 1024 }
const configFor = (datatype: Datatype) =>
  modelConfig.parse({
    name: 'm', platform: 'onnxruntime', max_batch_size: 8,
    inputs: [{ name: 'x', datatype, dims: [-1] }],
    outputs: [{ name: 'y', datatype, dims: [-1] }],
  })
const sample: Record<Datatype, unknown> = {
  BOOL: true, UINT8: 1, UINT16: 1, UINT32: 1, UINT64: 1, INT8: 1, INT16: 1, INT32: 1, INT64: 1, FP16: 1, FP32: 1, FP64: 1, BYTES: 'a',
}
const parse = (datatype: Datatype, shape: number[], data: unknown[]) =>
  parseInferRequest({ inputs: [{ name: 'x', datatype, shape, data }] }, configFor(datatype), LIMITS)

describe('parseInferRequest checks the data against the shape before allocating', () => {
  it.each(DATATYPES)('%s: a shape of 8,388,608 elements with one element of data is refused with nothing allocated', (datatype) => {
    allocations.length = 0
    expect(() => parse(datatype, [1, 8_388_608], [[sample[datatype]]])).toThrow(`input "x": data[0] has 1 elements, shape [1,8388608] needs 8388608`)
    expect(() => parse(datatype, [2, 3], [[sample[datatype], sample[datatype], sample[datatype]], [sample[datatype]]])).toThrow(`input "x": data[1] has 1 elements, shape [2,3] needs 3`)
    expect(() => parse(datatype, [1, 8_388_608], [sample[datatype]])).toThrow(`input "x": shape [1,8388608] needs 8388608 elements, data has 1`)
    expect(allocations).toEqual([])
  })

  it.each(DATATYPES)('%s: data that fits the shape is allocated once and filled', (datatype) => {
    allocations.length = 0
    const parsed = parse(datatype, [2, 2], [[sample[datatype], sample[datatype]], [sample[datatype], sample[datatype]]])
    expect(allocations).toEqual([4])
    expect(parsed.rows).toBe(2)
    expect(parsed.inputs.x.data.length).toBe(4)
  })

  it('still names a bad element by its nested index', () => {
    expect(() => parse('FP32', [2, 2], [[1, 2], [3, 'four']])).toThrow(`input "x": data[1][1] is the string "four", expected a finite number`)
  })
})
