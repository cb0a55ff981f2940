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

type NumericDatatype = Exclude<Datatype, 'BYTES'>
type TypedArrayOf = new (buffer: ArrayBuffer, byteOffset: number, length: number) => Exclude<TensorValues, string[]>

const ARRAY_TYPES: Record<NumericDatatype, TypedArrayOf & { BYTES_PER_ELEMENT: number }> = {
  FP32: Float32Array, FP64: Float64Array, INT8: Int8Array, UINT8: Uint8Array, BOOL: Uint8Array,
  INT16: Int16Array, UINT16: Uint16Array, FP16: Uint16Array, INT32: Int32Array, UINT32: Uint32Array,
  INT64: BigInt64Array, UINT64: BigUint64Array,
}

/** Bytes per element of a numeric datatype, as its typed array stores it. */
export const bytesPerElement = (datatype: NumericDatatype): number => ARRAY_TYPES[datatype].BYTES_PER_ELEMENT

const SLAB_BYTES = 64 * 1024
let slab = new ArrayBuffer(SLAB_BYTES)
let slabUsed = 0

/**
 * Zeroed storage for one request's tensor, carved from a shared slab: a backing store of its
 * own per request is the dearest allocation on the hot path (V8 keeps only arrays of up to 64
 * bytes on its heap, and every other one costs a malloc and a finalizer). A slab is freed when
 * the last tensor carved from it is; large tensors get a buffer of their own.
 */
export const allocateCarved = (datatype: Datatype, length: number): TensorValues => {
  if (datatype === 'BYTES') return allocate(datatype, length)
  const type = ARRAY_TYPES[datatype]
  const bytes = length * type.BYTES_PER_ELEMENT
  if (bytes > SLAB_BYTES / 8) return allocate(datatype, length)
  let at = (slabUsed + 7) & ~7
  if (at + bytes > SLAB_BYTES) {
    slab = new ArrayBuffer(SLAB_BYTES)
    at = 0
  }
  slabUsed = at + bytes
  return new type(slab, at, length)
}

/**
 * The tensors as they should be posted to another thread: structured cloning copies a view's
 * whole buffer, so a view into a larger one (a slab, a slice of a split request) is copied out.
 */
export const compactForTransfer = (tensors: TensorMap): TensorMap => {
  let compacted: TensorMap | undefined
  for (const name in tensors) {
    const { data } = tensors[name]
    if (Array.isArray(data) || data.byteLength === data.buffer.byteLength) continue
    compacted ??= { ...tensors }
    compacted[name] = { ...tensors[name], data: data.slice() }
  }
  return compacted ?? tensors
}

/** Elements per row: the product of the non-batch dims. */
export const rowWidth = (dims: readonly number[]): number => {
  let width = 1
  for (let i = 1; i < dims.length; i++) width *= dims[i]
  return width
}

/** Concatenates the same-named tensors of several requests along the batch dimension. */
export const concatRows = (parts: readonly HostTensor[]): HostTensor => {
  const first = parts[0]
  if (parts.length === 1) return first
  const rows = parts.reduce((n, p) => n + p.dims[0], 0)
  const width = rowWidth(first.dims)
  const data = allocateCarved(first.datatype, rows * width)
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
  const dims = tensor.dims.slice()
  dims[0] = count
  return { datatype: tensor.datatype, dims, data }
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
  // A plain loop: Array.from walks a typed array through its iterator.
  const numbers = data as Float32Array
  const values = new Array<number>(numbers.length)
  for (let i = 0; i < numbers.length; i++) values[i] = numbers[i]
  return values
}
