import { describe, expect, it } from 'vitest'
import { FP16_MAX, allocateCarved, compactForTransfer, fromHalfBits, toHalfBits, toJsonData } from '../../../backend/executor/tensor.ts'

describe('half precision', () => {
  it('encodes the IEEE 754 binary16 bit patterns', () => {
    expect([1, 2, -2, 0, -0, FP16_MAX, 2 ** -24, 2 ** -14, Infinity].map(toHalfBits)).toEqual([0x3c00, 0x4000, 0xc000, 0x0000, 0x8000, 0x7bff, 0x0001, 0x0400, 0x7c00])
  })

  it('decodes them back, every finite pattern round-tripping exactly', () => {
    const all = Uint16Array.from({ length: 0x10000 }, (_, i) => i).filter((bits) => (bits & 0x7c00) !== 0x7c00)
    const values = fromHalfBits(all)
    expect(Uint16Array.from(values.map(toHalfBits))).toEqual(all)
    expect(Object.is(fromHalfBits(Uint16Array.of(0x8000))[0], -0)).toBe(true)
  })

  it('gives FP16 tensors to JSON as numbers, not bit patterns', () => {
    expect(toJsonData({ datatype: 'FP16', dims: [2], data: Uint16Array.of(0x3c00, 0x4000) })).toEqual([1, 2])
  })
})

describe('request tensors carved from shared slabs', () => {
  it('are zeroed, typed for their datatype and never overlap, 8-byte aligned', () => {
    const carved = [allocateCarved('FP32', 23), allocateCarved('INT8', 3), allocateCarved('INT64', 2), allocateCarved('FP64', 5)]
    expect(carved.map((a) => a.constructor)).toEqual([Float32Array, Int8Array, BigInt64Array, Float64Array])
    for (const a of carved) expect(Array.from(a as Float32Array, Number).every((v) => v === 0)).toBe(true)
    const spans = carved.map((a) => a as Float32Array).filter((a) => a.buffer === (carved[0] as Float32Array).buffer).map((a) => [a.byteOffset, a.byteOffset + a.byteLength])
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]!)
    for (const [start] of spans) expect(start! % 8).toBe(0)
  })

  it('go to another thread as compact copies; whole buffers are posted as they are', () => {
    const carved = allocateCarved('FP32', 4) as Float32Array
    carved.set([1, 2, 3, 4])
    const own = Float32Array.of(5, 6)
    const posted = compactForTransfer({ a: { datatype: 'FP32', dims: [1, 4], data: carved }, b: { datatype: 'FP32', dims: [1, 2], data: own } })
    const a = posted.a!.data as Float32Array
    expect([a.byteOffset, a.buffer.byteLength, Array.from(a)]).toEqual([0, 16, [1, 2, 3, 4]])
    expect(posted.b!.data).toBe(own)
  })
})
