import type { Datatype } from '../../shared/datatypes.ts'

/** Flat, row-major tensor contents in the array type onnxruntime takes for the datatype. */
export type TensorValues =
  | Float32Array | Float64Array
  | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array | Uint32Array
  | BigInt64Array | BigUint64Array
  | string[]

/** A tensor as it crosses the thread boundary: plain data, no onnxruntime objects. */
export interface HostTensor {
  datatype: Datatype
  dims: number[]
  data: TensorValues
}

export type TensorMap = Record<string, HostTensor>

/** onnxruntime's name for each datatype. */
export const ORT_TYPES: Record<Datatype, string> = {
  BOOL: 'bool', UINT8: 'uint8', UINT16: 'uint16', UINT32: 'uint32', UINT64: 'uint64',
  INT8: 'int8', INT16: 'int16', INT32: 'int32', INT64: 'int64',
  FP16: 'float16', FP32: 'float32', FP64: 'float64', BYTES: 'string',
}

export const DATATYPE_OF_ORT: Record<string, Datatype> = Object.fromEntries(
  Object.entries(ORT_TYPES).map(([datatype, ort]) => [ort, datatype as Datatype]),
)

/** Allocates zeroed storage for `length` elements of a datatype. */
export const allocate = (datatype: Datatype, length: number): TensorValues => {
  switch (datatype) {
    case 'FP32': return new Float32Array(length)
    case 'FP64': return new Float64Array(length)
    case 'INT8': return new Int8Array(length)
    case 'UINT8': case 'BOOL': return new Uint8Array(length)
    case 'INT16': return new Int16Array(length)
    case 'UINT16': case 'FP16': return new Uint16Array(length)
    case 'INT32': return new Int32Array(length)
    case 'UINT32': return new Uint32Array(length)
    case 'INT64': return new BigInt64Array(length)
    case 'UINT64': return new BigUint64Array(length)
    case 'BYTES': return new Array<string>(length).fill('')
  }
}

/** Elements per row: the product of the non-batch dims. */
export const rowWidth = (dims: readonly number[]): number => dims.slice(1).reduce((a, b) => a * b, 1)

/** Concatenates the same-named tensors of several requests along the batch dimension. */
export const concatRows = (parts: readonly HostTensor[]): HostTensor => {
  const first = parts[0]
  if (parts.length === 1) return first
  const rows = parts.reduce((n, p) => n + p.dims[0], 0)
  const width = rowWidth(first.dims)
  const data = allocate(first.datatype, rows * width)
  let at = 0
  for (const part of parts) {
    if (Array.isArray(data)) {
      for (const s of part.data as string[]) data[at++] = s
    } else {
      ;(data as Float32Array).set(part.data as Float32Array, at)
      at += part.data.length
    }
  }
  return { datatype: first.datatype, dims: [rows, ...first.dims.slice(1)], data }
}

/** Rows [start, start + count) of a batched tensor, sharing memory where the type allows. */
export const sliceRows = (tensor: HostTensor, start: number, count: number): HostTensor => {
  const width = rowWidth(tensor.dims)
  const data = Array.isArray(tensor.data)
    ? tensor.data.slice(start * width, (start + count) * width)
    : (tensor.data as Float32Array).subarray(start * width, (start + count) * width)
  return { datatype: tensor.datatype, dims: [count, ...tensor.dims.slice(1)], data }
}

/** Largest finite IEEE 754 half-precision value. */
export const FP16_MAX = 65_504

// FP16 tensors hold the half-precision bit patterns (what onnxruntime-node reads and writes);
// the runtime's Float16Array does the rounding (to nearest, ties to even) both ways.
const halfScratch = new Float16Array(1)
const halfScratchBits = new Uint16Array(halfScratch.buffer)

/** The half-precision bits of `value`, rounded to the nearest representable half. */
export const toHalfBits = (value: number): number => {
  halfScratch[0] = value
  return halfScratchBits[0]
}

/** The numbers that half-precision bit patterns stand for. */
export const fromHalfBits = (bits: Uint16Array): number[] => Array.from(new Float16Array(bits.buffer, bits.byteOffset, bits.length))

/** JSON-ready values of a tensor (64-bit integers as numbers, booleans as booleans, FP16 as the numbers its bits stand for). */
export const toJsonData = (tensor: HostTensor): Array<number | boolean | string> => {
  const { data, datatype } = tensor
  if (Array.isArray(data)) return data
  if (datatype === 'BOOL') return Array.from(data as Uint8Array, (v) => v !== 0)
  if (datatype === 'FP16') return fromHalfBits(data as Uint16Array)
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Array.from(data, Number)
  return Array.from(data as Float32Array)
}
