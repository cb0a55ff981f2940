import type { Context } from 'hono'
import { quoteInput } from '../../shared/quote-input.ts'
import type { BackendEnv } from '../env.ts'
import { InferenceError, badRequest } from '../errors.ts'
import { allocateCarved, bytesPerElement, toJsonData, type HostTensor, type TensorValues } from '../executor/tensor.ts'
import { isJson, parseJsonText, readBodyBytes } from '../middleware/require-json.ts'
import { requestHeader } from '../request-header.ts'
import type { TensorConfig } from '../repository/model-config.ts'
import type { InferAnswer } from './response.ts'

/**
 * The binary tensor data extension (Triton's and KServe's): a request whose body is a JSON header
 * of this many bytes, then the raw data of each input that names a `binary_data_size` parameter,
 * in input order, little-endian, row-major, unpadded.
 */
export const INFERENCE_HEADER_LENGTH = 'inference-header-content-length'

const OCTET_STREAM = /^application\/octet-stream\s*(;|$)/i

/** The bytes after a binary request's JSON header, consumed input by input. */
export class BinaryData {
  at = 0
  readonly bytes: Uint8Array

  constructor(bytes: Uint8Array) {
    this.bytes = bytes
  }

  /** Refuses bytes no input claimed: a client and the server disagreeing on sizes must not pass silently. */
  checkConsumed(): void {
    const left = this.bytes.length - this.at
    if (left > 0) throw badRequest(`${left} bytes of binary data are claimed by no input's binary_data_size`)
  }
}

/** A binary request's JSON header (parsed) and the tensor bytes after it; the body is bounded like a JSON one. */
export const readBinaryInfer = async (c: Context<BackendEnv>, maxBytes: number, headerLength: string): Promise<{ header: unknown; binary: BinaryData }> => {
  const bytes = await readBodyBytes(c, maxBytes)
  const type = requestHeader(c, 'content-type') ?? ''
  if (!isJson(type) && !OCTET_STREAM.test(type.trim())) {
    throw new InferenceError(415, `expected Content-Type application/octet-stream or application/json with ${INFERENCE_HEADER_LENGTH}, got ${type ? quoteInput(type) : 'none'}`, {}, 'unsupported_media_type')
  }
  const trimmed = headerLength.trim()
  if (!/^[0-9]{1,15}$/.test(trimmed)) throw badRequest(`Inference-Header-Content-Length must be a byte count, got ${quoteInput(headerLength)}`)
  const length = Number(trimmed)
  if (length === 0) throw badRequest('Inference-Header-Content-Length is 0: the body must start with the JSON request header')
  if (length > bytes.length) throw badRequest(`Inference-Header-Content-Length ${length} exceeds the body's ${bytes.length} bytes`)
  return { header: parseJsonText(new TextDecoder().decode(bytes.subarray(0, length))), binary: new BinaryData(bytes.subarray(length)) }
}

const HALF_EXPONENT = 0x7c00
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** BYTES elements: each a 4-byte little-endian length, then that many bytes of UTF-8. */
const stringElements = (chunk: Uint8Array, length: number, name: string): string[] => {
  const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength)
  const out: string[] = []
  let at = 0
  while (at < chunk.length) {
    if (out.length === length) throw badRequest(`input "${name}": binary data holds more than the shape's ${length} BYTES elements`)
    if (at + 4 > chunk.length) throw badRequest(`input "${name}": binary element ${out.length} has a truncated 4-byte length`)
    const size = view.getUint32(at, true)
    at += 4
    if (at + size > chunk.length) throw badRequest(`input "${name}": binary element ${out.length} is ${size} bytes, past the input's binary_data_size`)
    try {
      out.push(utf8.decode(chunk.subarray(at, at + size)))
    } catch {
      throw badRequest(`input "${name}": binary element ${out.length} is not valid UTF-8`)
    }
    at += size
  }
  if (out.length !== length) throw badRequest(`input "${name}": binary data holds ${out.length} BYTES elements, the shape needs ${length}`)
  return out
}

/**
 * The first element that is not finite (for a model that does not allow them), or that is not a
 * BOOL's 0 or 1. Plain loops, one per type: they run over every element of a binary input.
 */
const badElement = (data: TensorValues, input: TensorConfig): { at: number; expected: string } | undefined => {
  const { datatype } = input
  if (datatype === 'BOOL') {
    const bytes = data as Uint8Array
    for (let i = 0; i < bytes.length; i++) if (bytes[i] > 1) return { at: i, expected: 'a byte of 0 (false) or 1 (true)' }
    return undefined
  }
  if (input.allow_non_finite) return undefined
  if (datatype === 'FP16') {
    const bits = data as Uint16Array
    for (let i = 0; i < bits.length; i++) if ((bits[i] & HALF_EXPONENT) === HALF_EXPONENT) return { at: i, expected: 'a finite FP16 value' }
    return undefined
  }
  if (datatype === 'FP32' || datatype === 'FP64') {
    const values = data as Float32Array
    // v - v is NaN exactly for NaN and ±Infinity.
    for (let i = 0; i < values.length; i++) if (values[i] - values[i] !== 0) return { at: i, expected: `a finite ${datatype} value` }
  }
  return undefined
}

/**
 * One input's tensor from the next `size` bytes of the binary data, after its size is checked
 * against the shape (so nothing is allocated for a shape the bytes cannot fill). Assumes a
 * little-endian host, as every platform onnxruntime-node ships for is.
 */
export const tensorFromBinary = (input: TensorConfig, shape: readonly number[], length: number, size: unknown, binary: BinaryData | undefined, where: string): TensorValues => {
  if (!binary) throw badRequest(`${where}.parameters.binary_data_size needs a binary body: send the JSON header's length in Inference-Header-Content-Length`)
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw badRequest(`${where}.parameters.binary_data_size must be a non-negative integer`)
  const left = binary.bytes.length - binary.at
  if (size > left) throw badRequest(`input "${input.name}": binary_data_size ${size} exceeds the ${left} bytes of binary data left in the body`)
  const chunk = binary.bytes.subarray(binary.at, binary.at + size)
  binary.at += size
  if (input.datatype === 'BYTES') return stringElements(chunk, length, input.name)
  const width = bytesPerElement(input.datatype)
  if (size !== length * width) throw badRequest(`input "${input.name}": binary_data_size ${size} does not match shape [${shape}] of ${input.datatype} (${length} × ${width} = ${length * width} bytes)`)
  const data = allocateCarved(input.datatype, length) as Exclude<TensorValues, string[]>
  new Uint8Array(data.buffer, data.byteOffset, data.byteLength).set(chunk)
  const bad = badElement(data, input)
  if (bad) throw badRequest(`input "${input.name}": binary element ${bad.at} is not ${bad.expected}`)
  return data
}

/** The request's binary output choices, as parseInferRequest has checked them. */
interface BinaryChoices {
  parameters?: { binary_data_output?: boolean }
  outputs?: ReadonlyArray<{ name: string; parameters?: { binary_data?: boolean } }>
}

/**
 * The outputs a checked request asked for as binary data (an output's `binary_data`, else the
 * request's `binary_data_output`), or undefined for none: then the answer is plain JSON.
 */
export const binaryOutputs = (request: unknown, answered: InferAnswer['outputs']): ReadonlySet<string> | undefined => {
  const { parameters, outputs } = request as BinaryChoices
  if (parameters === undefined && outputs === undefined) return undefined
  const byDefault = parameters?.binary_data_output === true
  const names = new Set<string>()
  for (const { name } of answered) {
    const asked = outputs?.find((o) => o.name === name)?.parameters?.binary_data
    if (asked ?? byDefault) names.add(name)
  }
  return names.size > 0 ? names : undefined
}

/** A tensor's binary data: the typed array's bytes, or for BYTES each element's length and UTF-8. */
const tensorBytes = ({ data }: HostTensor): Uint8Array => {
  if (!Array.isArray(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
  const encoded = data.map((v) => Buffer.from(v, 'utf8'))
  const out = Buffer.alloc(encoded.reduce((n, e) => n + 4 + e.length, 0))
  let at = 0
  for (const e of encoded) {
    at = out.writeUInt32LE(e.length, at)
    out.set(e, at)
    at += e.length
  }
  return out
}

/**
 * An answer with the `binary` outputs as binary data: the JSON header (those outputs name their
 * `binary_data_size` instead of `data`), then their bytes in output order; `headerLength` goes
 * into the response's Inference-Header-Content-Length.
 */
export const encodeBinaryAnswer = (model: string, version: string, { id, parameters, outputs }: InferAnswer, binary: ReadonlySet<string>): { body: Uint8Array; headerLength: number } => {
  const parts: Uint8Array[] = []
  const header = Buffer.from(JSON.stringify({
    model_name: model,
    model_version: version,
    id,
    parameters,
    outputs: outputs.map(({ name, tensor }) => {
      const described = { name, shape: tensor.dims, datatype: tensor.datatype }
      if (!binary.has(name)) return { ...described, data: toJsonData(tensor) }
      const bytes = tensorBytes(tensor)
      parts.push(bytes)
      return { ...described, parameters: { binary_data_size: bytes.length } }
    }),
  }))
  return { body: Buffer.concat([header, ...parts]), headerLength: header.length }
}
