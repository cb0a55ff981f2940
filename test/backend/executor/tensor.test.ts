import { describe, expect, it } from 'vitest'
import { FP16_MAX, fromHalfBits, toHalfBits, toJsonData } from '../../../backend/executor/tensor.ts'

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
