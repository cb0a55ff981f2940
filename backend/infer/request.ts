import { FLOAT_DATATYPES, INTEGER_RANGES, type Datatype } from '../../shared/datatypes.ts'
import { quoteInput } from '../../shared/quote-input.ts'
import { badRequest } from '../errors.ts'
import { tensorFromBinary, type BinaryData } from './binary.ts'
import { FP16_MAX, allocateCarved, toHalfBits, type TensorMap, type TensorValues } from '../executor/tensor.ts'
import type { ModelConfig, TensorConfig } from '../repository/model-config.ts'

/** An infer request checked against its model and converted to tensors. */
export interface ParsedInfer {
  id: string | undefined
  inputs: TensorMap
  /** The batch dimension (1 for models without one). */
  rows: number
  outputs: string[]
}

export interface ParseLimits {
  maxRows: number
  /** Bound on shape products, so a bogus shape cannot make us allocate more than the body could fill. */
  maxElements: number
}

const FP32_MAX = 3.4028234663852886e38
const NON_FINITE: Readonly<Record<string, number>> = { NaN: Number.NaN, Infinity: Infinity, '-Infinity': -Infinity }

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

const describe = (v: unknown): string => {
  if (v === undefined) return 'missing'
  if (Array.isArray(v)) return 'an array'
  if (v === null) return 'null'
  if (typeof v === 'string') return `the string ${quoteInput(v)}`
  if (typeof v === 'object') return 'an object'
  return `${typeof v} ${String(v)}`
}

const checkKeys = (value: Record<string, unknown>, allowed: readonly string[], where: string) => {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw badRequest(`${where} has an unknown field ${quoteInput(key)} (allowed: ${allowed.join(', ')})`)
  }
}

/** The binary tensor data extension's parameter each part of a request may carry. */
const BINARY_PARAMETERS = { request: 'binary_data_output', input: 'binary_data_size', output: 'binary_data' } as const

/** Checks `parameters`, and that a binary extension parameter sits where it belongs (its value is checked where it is used). */
const checkParameters = (value: unknown, where: string, part: keyof typeof BINARY_PARAMETERS) => {
  if (value === undefined) return
  if (!isObject(value)) throw badRequest(`${where}.parameters must be an object`)
  for (const [key, v] of Object.entries(value)) {
    if (!['string', 'number', 'boolean'].includes(typeof v)) throw badRequest(`${where}.parameters[${quoteInput(key)}] must be a string, number or boolean`)
  }
  for (const [owner, key] of Object.entries(BINARY_PARAMETERS)) {
    if (owner !== part && value[key] !== undefined) throw badRequest(`${where}: ${key} is a parameter of the ${owner}${owner === 'request' ? '' : 's'}, not of the ${part}${part === 'request' ? '' : 's'}`)
  }
  const flag = BINARY_PARAMETERS[part]
  if (part !== 'input' && value[flag] !== undefined && typeof value[flag] !== 'boolean') throw badRequest(`${where}.parameters.${flag} must be true or false`)
}

/** Why an element was refused: what was expected instead. */
class Invalid {
  constructor(readonly expected: string) {}
}

/** Converts one JSON element for a datatype (BOOL to 0/1, 64-bit integers to bigint). */
const element = (v: unknown, datatype: Datatype, allowNonFinite: boolean): number | bigint | string | Invalid => {
  if (FLOAT_DATATYPES.has(datatype)) {
    if (typeof v === 'number') {
      if (!Number.isFinite(v) && !allowNonFinite) return new Invalid('a finite number (a literal this large overflows to Infinity)')
      if (datatype === 'FP32' && Number.isFinite(v) && Math.abs(v) > FP32_MAX) return new Invalid(`a number within FP32 range (±${FP32_MAX})`)
      if (datatype === 'FP16') return Number.isFinite(v) && Math.abs(v) > FP16_MAX ? new Invalid(`a number within FP16 range (±${FP16_MAX})`) : toHalfBits(v)
      return v
    }
    if (allowNonFinite && typeof v === 'string' && Object.hasOwn(NON_FINITE, v)) return datatype === 'FP16' ? toHalfBits(NON_FINITE[v]) : NON_FINITE[v]
    return new Invalid(allowNonFinite ? 'a number, "NaN", "Infinity" or "-Infinity"' : 'a finite number')
  }
  const range = INTEGER_RANGES[datatype]
  if (range) {
    if (typeof v !== 'number' || !Number.isInteger(v)) return new Invalid(`an integer (${datatype})`)
    if (v < range[0] || v > range[1]) return new Invalid(`an integer within ${datatype} range [${range[0]}, ${range[1]}]`)
    return datatype === 'INT64' || datatype === 'UINT64' ? BigInt(v) : v
  }
  if (datatype === 'BOOL') return typeof v === 'boolean' ? (v ? 1 : 0) : new Invalid('true or false')
  return typeof v === 'string' ? v : new Invalid('a string')
}

/** `[i][j]…` of the element at a flat row-major index, built only for error messages. */
const pathOf = (flat: number, shape: readonly number[]): string => {
  const indices: number[] = []
  for (let d = shape.length - 1; d >= 0; d--) {
    indices[d] = flat % shape[d]
    flat = Math.floor(flat / shape[d])
  }
  return indices.map((i) => `[${i}]`).join('')
}

/**
 * Converts one element into `target[at]`, or throws naming it (`where` is built only then).
 * FP32/FP64 numbers in range take the first branch: this runs for every element of every request.
 */
const store = (target: unknown[], at: number, v: unknown, input: TensorConfig, where: (at: number) => string) => {
  if ((input.datatype === 'FP32' || input.datatype === 'FP64') && typeof v === 'number' && Math.abs(v) <= FP32_MAX) {
    target[at] = v
    return
  }
  const converted = element(v, input.datatype, input.allow_non_finite)
  if (converted instanceof Invalid) throw badRequest(`input "${input.name}": data${where(at)} is ${describe(v)}, expected ${converted.expected}`)
  target[at] = converted
}

const flatIndex = (at: number) => `[${at}]`

/**
 * Walks nested data that must have exactly the declared shape, handing each element to `leaf`
 * with its flat index. Without `leaf` it checks only the arrays' lengths, not the elements: that
 * costs one step per innermost array, so it runs before anything is allocated for the shape.
 */
const walkNested = (data: unknown[], shape: readonly number[], input: TensorConfig, leaf?: (v: unknown, at: number) => void) => {
  let at = 0
  const trail: number[] = []
  const walk = (node: unknown, depth: number) => {
    if (depth === shape.length) {
      leaf?.(node, at++)
      return
    }
    const where = () => `data${trail.slice(0, depth).map((i) => `[${i}]`).join('')}`
    if (!Array.isArray(node)) throw badRequest(`input "${input.name}": ${where()} is ${describe(node)}, expected an array of ${shape[depth]} (shape [${shape}])`)
    if (node.length !== shape[depth]) throw badRequest(`input "${input.name}": ${where()} has ${node.length} elements, shape [${shape}] needs ${shape[depth]}`)
    if (!leaf && depth === shape.length - 1) return
    for (let i = 0; i < node.length; i++) {
      trail[depth] = i
      walk(node[i], depth + 1)
    }
  }
  walk(data, 0)
}

/**
 * Flattens row-major data into `out`. Nested data must have exactly the declared shape; flat
 * data must have exactly the product of the shape. Messages are built only on failure.
 */
const fill = (data: unknown[], shape: readonly number[], input: TensorConfig, out: TensorValues) => {
  const target = out as unknown[]
  if (data.length === 0 || !Array.isArray(data[0])) {
    for (let i = 0; i < data.length; i++) store(target, i, data[i], input, flatIndex)
    return
  }
  const nestedIndex = (at: number) => pathOf(at, shape)
  walkNested(data, shape, input, (v, at) => store(target, at, v, input, nestedIndex))
}

const isShape = (shape: unknown): shape is number[] => {
  if (!Array.isArray(shape)) return false
  for (let i = 0; i < shape.length; i++) if (!Number.isInteger(shape[i]) || shape[i] < 0) return false
  return true
}

/** Whether `shape` is the declared dims, after the batch dimension when the model has one (-1 matches any size). */
const matchesDims = (shape: readonly number[], dims: readonly number[], batched: boolean): boolean => {
  const skip = batched ? 1 : 0
  if (shape.length !== dims.length + skip) return false
  for (let i = 0; i < dims.length; i++) if (dims[i] !== -1 && dims[i] !== shape[i + skip]) return false
  return true
}

const checkShape = (shape: unknown, input: TensorConfig, batched: boolean, limits: ParseLimits): number[] => {
  if (!isShape(shape)) throw badRequest(`input "${input.name}": shape must be an array of non-negative integers`)
  if (!matchesDims(shape, input.dims, batched)) {
    const expected = batched ? [-1, ...input.dims] : input.dims
    throw badRequest(`input "${input.name}": shape [${shape}] does not match the model's [${expected}] (-1 is any size)`)
  }
  if (batched) {
    if (shape[0] < 1) throw badRequest(`input "${input.name}": batch dimension must be at least 1`)
    if (shape[0] > limits.maxRows) throw badRequest(`input "${input.name}": batch dimension ${shape[0]} exceeds the limit of ${limits.maxRows} rows per request`)
  }
  return shape
}

const declaredInput = (config: ModelConfig, name: string): TensorConfig | undefined => {
  for (const input of config.inputs) if (input.name === name) return input
  return undefined
}

const elementCount = (shape: readonly number[]): number => {
  let n = 1
  for (let i = 0; i < shape.length; i++) n *= shape[i]
  return n
}

/**
 * Checks an Open Inference Protocol infer request against the model's declared signature. With
 * `binary` (the bytes after a binary request's JSON header), inputs may carry their data there.
 */
export const parseInferRequest = (body: unknown, config: ModelConfig, limits: ParseLimits, binary?: BinaryData): ParsedInfer => {
  if (!isObject(body)) throw badRequest(`request body must be a JSON object, got ${describe(body)}`)
  checkKeys(body, ['id', 'parameters', 'inputs', 'outputs'], 'request')
  if (body.id !== undefined && (typeof body.id !== 'string' || body.id.length > 256)) throw badRequest('id must be a string of at most 256 characters')
  checkParameters(body.parameters, 'request', 'request')
  if (!Array.isArray(body.inputs) || body.inputs.length === 0) throw badRequest('inputs must be a non-empty array')
  const batched = config.max_batch_size > 0
  const inputs: TensorMap = {}
  let rows: number | undefined
  for (let i = 0; i < body.inputs.length; i++) {
    const raw: unknown = body.inputs[i]
    if (!isObject(raw)) throw badRequest(`inputs[${i}] must be an object`)
    checkKeys(raw, ['name', 'shape', 'datatype', 'parameters', 'data'], `inputs[${i}]`)
    if (typeof raw.name !== 'string') throw badRequest(`inputs[${i}].name must be a string`)
    const declared = declaredInput(config, raw.name)
    if (!declared) throw badRequest(`unknown input ${quoteInput(raw.name)}; the model takes ${config.inputs.map((d) => `"${d.name}"`).join(', ')}`)
    if (inputs[declared.name]) throw badRequest(`input "${declared.name}" appears more than once`)
    if (raw.datatype === undefined) throw badRequest(`input "${declared.name}": datatype is missing; the model takes ${declared.datatype}`)
    if (raw.datatype !== declared.datatype) throw badRequest(`input "${declared.name}": datatype ${describe(raw.datatype)} does not match the model's ${declared.datatype}`)
    checkParameters(raw.parameters, `inputs[${i}]`, 'input')
    const shape = checkShape(raw.shape, declared, batched, limits)
    const length = elementCount(shape)
    const binarySize = isObject(raw.parameters) ? raw.parameters.binary_data_size : undefined
    let data: TensorValues
    if (binarySize !== undefined) {
      if (raw.data !== undefined) throw badRequest(`input "${declared.name}": both data and binary_data_size are present; send one`)
      data = tensorFromBinary(declared, shape, length, binarySize, binary, `inputs[${i}]`)
    } else {
      if (!Array.isArray(raw.data)) throw badRequest(`input "${declared.name}": data must be an array`)
      const nested = raw.data.length > 0 && Array.isArray(raw.data[0])
      // The data must fit the shape before the shape's storage is allocated: a short body may declare a vast shape.
      if (nested) walkNested(raw.data, shape, declared)
      else if (raw.data.length !== length) {
        throw badRequest(`input "${declared.name}": shape [${shape}] needs ${length} elements, data has ${raw.data.length}`)
      }
      if (length > limits.maxElements) throw badRequest(`input "${declared.name}": shape [${shape}] has more elements than this request could carry`)
      data = allocateCarved(declared.datatype, length)
      fill(raw.data, shape, declared, data)
    }
    const inputRows = batched ? shape[0] : 1
    if (rows !== undefined && inputRows !== rows) throw badRequest(`inputs disagree on the batch dimension (${rows} vs ${inputRows})`)
    rows = inputRows
    inputs[declared.name] = { datatype: declared.datatype, dims: shape, data }
  }
  if (body.inputs.length < config.inputs.length) {
    const missing = config.inputs.filter((d) => !inputs[d.name]).map((d) => `"${d.name}"`)
    throw badRequest(`missing input ${missing.join(', ')}`)
  }
  binary?.checkConsumed()
  return { id: body.id, inputs, rows: rows ?? 1, outputs: parseOutputs(body.outputs, config) }
}

const parseOutputs = (value: unknown, config: ModelConfig): string[] => {
  if (value === undefined) return config.outputs.map((o) => o.name)
  if (!Array.isArray(value) || value.length === 0) throw badRequest('outputs must be a non-empty array when present')
  const names: string[] = []
  for (const [i, raw] of value.entries()) {
    if (!isObject(raw)) throw badRequest(`outputs[${i}] must be an object`)
    checkKeys(raw, ['name', 'parameters'], `outputs[${i}]`)
    checkParameters(raw.parameters, `outputs[${i}]`, 'output')
    if (typeof raw.name !== 'string') throw badRequest(`outputs[${i}].name must be a string`)
    if (!config.outputs.some((o) => o.name === raw.name)) {
      throw badRequest(`unknown output ${describe(raw.name)}; the model has ${config.outputs.map((o) => `"${o.name}"`).join(', ')}`)
    }
    if (names.includes(raw.name)) throw badRequest(`output "${raw.name}" is requested more than once`)
    names.push(raw.name)
  }
  return names
}
