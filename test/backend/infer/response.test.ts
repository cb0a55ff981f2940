import { describe, expect, it } from 'vitest'
import { BATCH_REASONS } from '../../../shared/protocol.ts'
import { ResponseTemplate, inferResponse, type InferAnswer } from '../../../backend/infer/response.ts'
import { toHalfBits, type HostTensor } from '../../../backend/executor/tensor.ts'

const answer = (outputs: Array<[string, HostTensor]>, id = 'req-1', reason: (typeof BATCH_REASONS)[number] = 'idle'): InferAnswer => ({
  id,
  parameters: { queue_us: 358, compute_us: 41, batch_size: 61, batch_reason: reason },
  outputs: outputs.map(([name, tensor]) => ({ name, tensor })),
})

/** What the template must write: the response object through JSON.stringify. */
const expectSameAsStringify = (model: string, version: string, a: InferAnswer) => {
  const text = new ResponseTemplate(model, version).encode(a)
  expect(text).toBe(JSON.stringify(inferResponse(model, version, a)))
  return text
}

describe('ResponseTemplate', () => {
  it('writes an FP32 answer byte for byte as JSON.stringify of the response object', () => {
    const text = expectSameAsStringify('credit-risk', '2', answer([['probabilities', { datatype: 'FP32', dims: [1, 2], data: Float32Array.of(0.960357666015625, 0.03964230790734291) }]]))
    expect(JSON.parse(text)).toEqual({
      model_name: 'credit-risk',
      model_version: '2',
      id: 'req-1',
      parameters: { queue_us: 358, compute_us: 41, batch_size: 61, batch_reason: 'idle' },
      outputs: [{ name: 'probabilities', shape: [1, 2], datatype: 'FP32', data: [Math.fround(0.960357666015625), Math.fround(0.03964230790734291)] }],
    })
  })

  it('writes non-finite values as null and -0 as 0, as JSON does', () => {
    const text = expectSameAsStringify('m', '1', answer([['y', { datatype: 'FP32', dims: [5], data: Float32Array.of(Number.NaN, Infinity, -Infinity, -0, 1e-45) }]]))
    expect(JSON.parse(text).outputs[0].data).toEqual([null, null, null, 0, Math.fround(1e-45)])
  })

  it('matches JSON.stringify for every datatype it can answer with', () => {
    const tensors: Array<[string, HostTensor]> = [
      ['f64', { datatype: 'FP64', dims: [2, 2], data: Float64Array.of(Math.PI, -1e308, 5e-324, Number.NaN) }],
      ['f16', { datatype: 'FP16', dims: [3], data: Uint16Array.of(toHalfBits(1.5), toHalfBits(-65504), 0x7e00) }],
      ['i64', { datatype: 'INT64', dims: [2], data: BigInt64Array.of(-(2n ** 53n), 42n) }],
      ['u64', { datatype: 'UINT64', dims: [1], data: BigUint64Array.of(2n ** 53n - 1n) }],
      ['i8', { datatype: 'INT8', dims: [2], data: Int8Array.of(-128, 127) }],
      ['u32', { datatype: 'UINT32', dims: [1], data: Uint32Array.of(4294967295) }],
      ['flag', { datatype: 'BOOL', dims: [3], data: Uint8Array.of(1, 0, 2) }],
      ['label', { datatype: 'BYTES', dims: [4], data: ['plain', 'quote " and \\ back', 'line\nbreak\u0001\u2028', 'lone \ud800 surrogate'] }],
      ['none', { datatype: 'FP32', dims: [0, 2], data: new Float32Array(0) }],
    ]
    expectSameAsStringify('m', '7', answer(tensors))
  })

  it('writes 64-bit integers with every digit, beyond what a JS number holds', () => {
    const text = new ResponseTemplate('m', '1').encode(answer([
      ['i64', { datatype: 'INT64', dims: [3], data: BigInt64Array.of(2n ** 62n + 1n, -(2n ** 63n), 2n ** 63n - 1n) }],
      ['u64', { datatype: 'UINT64', dims: [2], data: BigUint64Array.of(2n ** 64n - 1n, 2n ** 53n + 1n) }],
    ]))
    expect(text).toContain('"datatype":"INT64","data":[4611686018427387905,-9223372036854775808,9223372036854775807]}')
    expect(text).toContain('"datatype":"UINT64","data":[18446744073709551615,9007199254740993]}')
    expect(JSON.parse(text)).toMatchObject({ outputs: [{ name: 'i64', shape: [3] }, { name: 'u64', shape: [2] }] })
  })

  it('escapes the model name, the version and the id, and writes every batch reason', () => {
    for (const reason of BATCH_REASONS) expectSameAsStringify('we"ird\\model', 'v"1', answer([['o"ut', { datatype: 'FP32', dims: [1], data: Float32Array.of(1) }]], 'id "with" \\ quotes\n', reason))
  })

  it('matches JSON.stringify on random FP32 outputs', () => {
    const bits = new Uint32Array(64)
    let seed = 12345
    for (let i = 0; i < bits.length; i++) bits[i] = seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    const data = new Float32Array(bits.buffer)
    expectSameAsStringify('m', '1', answer([['a', { datatype: 'FP32', dims: [32, 2], data }], ['b', { datatype: 'FP32', dims: [64], data: data.slice().reverse() }]]))
  })
})
