import { request as httpRequest } from 'node:http'
import { gzipSync } from 'node:zlib'
import onnxProto from 'onnx-proto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writeModelConfig, writeModelVersion } from '../../tools/training/repository-writer.ts'
import { startBackend, type BackendProcess } from './support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from './support/fixture-repository.ts'
import { type ElemType, encodeModel, tensorInfo } from './support/onnx-graph.ts'

// A corpus of malformed and hostile requests against the real server (child process, real
// sessions). Each must be refused with the right status and an `{"error": "..."}` body that says
// exactly what is wrong, without a stack trace or a server path; the server must survive them all.

const { onnx } = onnxProto

const TOKEN = 'bad-input-admin-token-0123456789'
const MAX_BODY_BYTES = 65_536
const MAX_REQUEST_ROWS = 100
/** Width of credit-risk's `features` input (FP32, [-1, 23]). */
const D = 23
const INFER = '/v2/models/credit-risk/infer'
const MIXED = '/v2/models/mixed/infer'
const TAGS = '/v2/models/tags/infer'
const FIXED = '/v2/models/tiny-fixed/infer'
const NON_FINITE = '/v2/models/tiny-nan/infer'
const INDEX = '/v2/repository/index'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const BOM = '\uFEFF'

// ---------------------------------------------------------------------------------------------
// Extra models: an INT64 + BOOL model with two inputs and two outputs, a BYTES model, a model
// without a batch dimension and one that admits non-finite floats.

const batched = (name: string, type: ElemType, width: number) => tensorInfo(name, type, ['batch', width])
const onnxModel = (name: string, graph: Omit<onnxProto.onnx.IGraphProto, 'name'>): Uint8Array =>
  encodeModel({ name, ...graph })

/** `masked = ids * mask`, `mask_echo = mask`: INT64 and BOOL inputs, two outputs. */
const addMixedModel = async (root: string) => {
  await writeModelConfig(root, {
    name: 'mixed',
    platform: 'onnxruntime',
    max_batch_size: 8,
    inputs: [{ name: 'ids', datatype: 'INT64', dims: [3] }, { name: 'mask', datatype: 'BOOL', dims: [3] }],
    outputs: [{ name: 'masked', datatype: 'INT64', dims: [3] }, { name: 'mask_echo', datatype: 'BOOL', dims: [3] }],
    dynamic_batching: { max_queue_delay_us: 500 },
    execution_providers: ['cpu'],
  })
  const model = onnxModel('mixed', {
    input: [batched('ids', 'INT64', 3), batched('mask', 'BOOL', 3)],
    output: [batched('masked', 'INT64', 3), batched('mask_echo', 'BOOL', 3)],
    node: [
      { opType: 'Cast', name: 'cast', input: ['mask'], output: ['mask_i64'], attribute: [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: onnx.TensorProto.DataType.INT64 }] },
      { opType: 'Mul', name: 'mul', input: ['ids', 'mask_i64'], output: ['masked'] },
      { opType: 'Identity', name: 'echo', input: ['mask'], output: ['mask_echo'] },
    ],
  })
  await writeModelVersion(root, 'mixed', 1, { 'model.onnx': model })
}

/** `tags_out = tags`: a BYTES (string) input. */
const addTagsModel = async (root: string) => {
  await writeModelConfig(root, {
    name: 'tags',
    platform: 'onnxruntime',
    max_batch_size: 8,
    inputs: [{ name: 'tags', datatype: 'BYTES', dims: [2] }],
    outputs: [{ name: 'tags_out', datatype: 'BYTES', dims: [2] }],
    execution_providers: ['cpu'],
  })
  const model = onnxModel('tags', {
    input: [batched('tags', 'STRING', 2)],
    output: [batched('tags_out', 'STRING', 2)],
    node: [{ opType: 'Identity', name: 'echo', input: ['tags'], output: ['tags_out'] }],
  })
  await writeModelVersion(root, 'tags', 1, { 'model.onnx': model })
}

// ---------------------------------------------------------------------------------------------
// Request builders.

const row = (r = 0) => Array.from({ length: D }, (_, i) => (((r + 1) * (i + 3)) % 11) / 10)
const flat = (rows = 1) => Array.from({ length: rows }, (_, r) => row(r)).flat()
const nested = (rows = 1) => Array.from({ length: rows }, (_, r) => row(r))

type Fields = Record<string, unknown>
const features = (over: Fields = {}): Fields => ({ name: 'features', shape: [1, D], datatype: 'FP32', data: flat(1), ...over })
const json = (value: unknown) => JSON.stringify(value)
/** A credit-risk request with top-level fields replaced or added. */
const request = (over: Fields = {}) => json({ inputs: [features()], ...over })
/** A credit-risk request whose one input has fields replaced or added. */
const input = (over: Fields) => json({ inputs: [features(over)] })
/** A request without one of the input's fields. */
const inputWithout = (field: string) => {
  const f = features()
  delete f[field]
  return json({ inputs: [f] })
}

const MARK = '__LITERAL__'
/** Flat one-row data with elements replaced by raw JSON text (1e999, NaN, …), verbatim. */
const literals = (byIndex: Record<number, string>) => {
  const data: unknown[] = flat(1)
  for (const index of Object.keys(byIndex)) data[Number(index)] = `${MARK}${index}`
  let text = input({ data })
  for (const [index, literal] of Object.entries(byIndex)) text = text.replace(json(`${MARK}${index}`), literal)
  return text
}
const literalAt = (index: number, literal: string) => literals({ [index]: literal })
/** Flat one-row data with element `index` replaced by a JSON value. */
const valueAt = (index: number, value: unknown, rows = 1) => {
  const data: unknown[] = flat(rows)
  data[index] = value
  return input({ shape: [rows, D], data })
}

const ids = (over: Fields = {}): Fields => ({ name: 'ids', shape: [2, 3], datatype: 'INT64', data: [1, 2, 3, 4, 5, 6], ...over })
const mask = (over: Fields = {}): Fields => ({ name: 'mask', shape: [2, 3], datatype: 'BOOL', data: [true, false, true, false, true, true], ...over })
const mixed = (idsOver: Fields = {}, maskOver: Fields = {}) => json({ inputs: [ids(idsOver), mask(maskOver)] })
const idsValueAt = (index: number, value: unknown) => {
  const data: unknown[] = [1, 2, 3, 4, 5, 6]
  data[index] = value
  return mixed({ data })
}
const maskValueAt = (index: number, value: unknown) => {
  const data: unknown[] = [true, false, true, false, true, true]
  data[index] = value
  return mixed({}, { data })
}
const idsLiteralAt = (index: number, literal: string) => {
  const data: unknown[] = [1, 2, 3, 4, 5, 6]
  data[index] = MARK
  return mixed({ data }).replace(json(MARK), literal)
}
const tags = (data: unknown[], over: Fields = {}) => json({ inputs: [{ name: 'tags', shape: [1, 2], datatype: 'BYTES', data, ...over }] })
const tinyNan = (data: unknown[]) => json({ inputs: [{ name: 'features', shape: [1, 4], datatype: 'FP32', data }] })
const tinyFixed = (shape: unknown, data: unknown[] = [0.1, 0.2, 0.3, 0.4]) => json({ inputs: [{ name: 'features', shape, datatype: 'FP32', data }] })

/** `levels` nested single-element arrays around `inner`, built as text (JSON.stringify would recurse). */
const deepArray = (levels: number, inner = '0') => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`

// ---------------------------------------------------------------------------------------------
// Transport: node:http, so bodies, paths and headers go out byte for byte (fetch would add a
// content type, normalize `..` and `%2e`, and refuse some headers).

interface Sent {
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE'
  path: string
  /** Request headers (an array repeats the header); `undefined` removes a default (the JSON content type of a POST). */
  headers?: Record<string, string | string[] | undefined>
  body?: string | Buffer
  /** Send the body in chunks without Content-Length (Transfer-Encoding: chunked). */
  chunked?: boolean
}

interface Received {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}

let backend: BackendProcess
let fixture: FixtureRepository

const send = ({ method = 'POST', path, headers = {}, body, chunked = false }: Sent): Promise<Received> =>
  new Promise((resolve, reject) => {
    const url = new URL(backend.url)
    const merged: Record<string, string | string[] | undefined> = { ...(method === 'POST' ? { 'content-type': 'application/json' } : {}), ...headers }
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8')
    const outgoing: Record<string, string | string[]> = {}
    for (const [k, v] of Object.entries(merged)) if (v !== undefined) outgoing[k] = v
    if (payload && !chunked) outgoing['content-length'] = String(payload.length)
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers: outgoing, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    // The server may answer (413) and close before a large body is fully written; the answer wins.
    req.on('error', reject)
    if (payload && chunked) {
      for (let at = 0; at < payload.length; at += 8192) req.write(payload.subarray(at, at + 8192))
      req.end()
    } else {
      req.end(payload)
    }
  })

/** Stack frames, source positions or server paths: none of these may reach a client. */
const LEAKS = [/\n\s*at\s/, /\bat\s+\S+\s+\(/, /file:\/\//, /\/work\//, /node_modules/, /\.ts:\d+/, /\/tmp\//, /edge-infer-repo-/]

/** Checks the `{"error": string}` shape and the absence of leaks; returns the message. */
const errorOf = (res: Received): string => {
  for (const leak of LEAKS) expect(res.text, `response leaks ${leak}`).not.toMatch(leak)
  expect(String(res.headers['content-type'] ?? ''), `content type of: ${res.text}`).toMatch(/^application\/json\b/)
  let body: unknown
  expect(() => (body = JSON.parse(res.text)), `body is not JSON: ${JSON.stringify(res.text)}`).not.toThrow()
  expect(body, `body: ${res.text}`).toBeTypeOf('object')
  expect(Object.keys(body as object), `body: ${res.text}`).toEqual(['error'])
  const message = (body as { error: unknown }).error
  expect(message).toBeTypeOf('string')
  expect((message as string).length).toBeGreaterThan(0)
  return message as string
}

// ---------------------------------------------------------------------------------------------
// The corpus.

interface BadCase extends Sent {
  name: string
  status: number
  /** What the `error` message must say. */
  error: RegExp
  /** Response headers that must be present, by lower-case name. */
  responseHeaders?: Record<string, RegExp>
}

const MALFORMED = /^malformed JSON: /
const CONTENT_TYPE = /expected Content-Type application\/json, got /
const NOT_OBJECT = /^request body must be a JSON object, got /
const DEADLINE = /x-request-deadline-ms must be a whole number of milliseconds between 1 and 3600000/i
const UNAUTHORIZED = /missing or wrong admin bearer token/
const BEARER = { 'www-authenticate': /^Bearer realm="[^"]+"$/ }
const TOO_LARGE = new RegExp(`request body exceeds ${MAX_BODY_BYTES} bytes`)
const big = (bytes: number) => json({ id: 'x'.repeat(bytes), inputs: [features()] })

const cases: BadCase[] = [
  // --- Malformed JSON -------------------------------------------------------------------------
  { name: 'truncated body (cut inside the first input)', path: INFER, body: request().slice(0, 40), status: 400, error: /^malformed JSON: .*(position \d+|end of JSON input)/ },
  { name: 'truncated inside the data array', path: INFER, body: request().slice(0, request().lastIndexOf(']') - 3), status: 400, error: /^malformed JSON: .*(position \d+|end of JSON input)/ },
  { name: 'only an opening brace', path: INFER, body: '{', status: 400, error: /^malformed JSON: Expected property name or '\}' in JSON at position 1/ },
  { name: 'trailing comma in an object', path: INFER, body: request().replace(/\}$/, ',}'), status: 400, error: /^malformed JSON: Expected double-quoted property name in JSON at position \d+/ },
  { name: 'trailing comma in the data array', path: INFER, body: request().replace(/\]\}\]\}$/, ',]}]}'), status: 400, error: /^malformed JSON: Unexpected token '\]'/ },
  { name: 'NaN literal in data', path: INFER, body: literalAt(0, 'NaN'), status: 400, error: /^malformed JSON: Unexpected token 'N'/ },
  { name: 'Infinity literal in data', path: INFER, body: literalAt(3, 'Infinity'), status: 400, error: /^malformed JSON: Unexpected token 'I'/ },
  { name: '-Infinity literal in data', path: INFER, body: literalAt(3, '-Infinity'), status: 400, error: /^malformed JSON: No number after minus sign in JSON at position \d+/ },
  { name: 'single-quoted strings', path: INFER, body: request().replaceAll('"', "'"), status: 400, error: /^malformed JSON: Expected property name or '\}' in JSON at position 1/ },
  { name: 'unquoted keys', path: INFER, body: '{inputs: []}', status: 400, error: /^malformed JSON: Expected property name or '\}' in JSON at position 1/ },
  { name: 'a // comment', path: INFER, body: `{"inputs": [] // none\n}`, status: 400, error: /^malformed JSON: .*position 14/ },
  { name: 'empty body', path: INFER, body: '', status: 400, error: /^request body is empty; expected a JSON object$/ },
  { name: 'whitespace-only body', path: INFER, body: ' \n\t ', status: 400, error: /^malformed JSON: Unexpected end of JSON input/ },
  { name: 'BOM before a truncated body', path: INFER, body: BOM + request().slice(0, 30), status: 400, error: MALFORMED },
  { name: 'BOM between tokens', path: INFER, body: request().replace('"inputs":', `"inputs":${BOM}`), status: 400, error: /^malformed JSON: Unexpected token '\uFEFF'/ },
  { name: 'UTF-16LE body with BOM', path: INFER, headers: { 'content-type': 'application/json; charset=utf-16' }, body: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(request(), 'utf16le')]), status: 400, error: MALFORMED },
  { name: 'invalid UTF-8 byte where a value belongs', path: INFER, body: Buffer.concat([Buffer.from('{"inputs":'), Buffer.from([0xff]), Buffer.from('}')]), status: 400, error: /^malformed JSON: Unexpected token/ },
  { name: 'garbage after the object', path: INFER, body: `${request()}x`, status: 400, error: /^malformed JSON: Unexpected non-whitespace character after JSON at position \d+/ },
  { name: 'two concatenated objects', path: INFER, body: request() + request(), status: 400, error: /^malformed JSON: Unexpected non-whitespace character after JSON at position \d+/ },
  { name: 'newline-delimited JSON (two lines)', path: INFER, body: `${request()}\n${request()}\n`, status: 400, error: /^malformed JSON: Unexpected non-whitespace character after JSON at position \d+/ },
  { name: 'raw newline inside a string', path: INFER, body: request({ id: 'a\nb' }).replace('\\n', '\n'), status: 400, error: /^malformed JSON: Bad control character in string literal in JSON at position \d+/ },
  { name: 'invalid escape \\x41', path: INFER, body: request({ id: 'A' }).replace('"A"', '"\\x41"'), status: 400, error: /^malformed JSON: Bad escaped character in JSON at position \d+/ },
  { name: 'leading zero in a number', path: INFER, body: literalAt(1, '01'), status: 400, error: /^malformed JSON: Unexpected number in JSON at position \d+/ },
  { name: 'hexadecimal number', path: INFER, body: literalAt(1, '0x1F'), status: 400, error: /^malformed JSON: Expected ',' or '\]' after array element in JSON at position \d+/ },
  { name: 'explicit plus sign', path: INFER, body: literalAt(1, '+1'), status: 400, error: /^malformed JSON: Unexpected token '\+'/ },
  { name: 'number without integer part (.5)', path: INFER, body: literalAt(1, '.5'), status: 400, error: /^malformed JSON: Unexpected token '\.'/ },
  { name: 'number with a dangling exponent (1e)', path: INFER, body: literalAt(1, '1e'), status: 400, error: /^malformed JSON: Exponent part is missing a number in JSON at position \d+/ },
  { name: 'undefined literal', path: INFER, body: literalAt(2, 'undefined'), status: 400, error: /^malformed JSON: Unexpected token 'u'/ },
  { name: 'Python None literal', path: INFER, body: literalAt(2, 'None'), status: 400, error: /^malformed JSON: Unexpected token 'N'/ },

  // --- Content types --------------------------------------------------------------------------
  { name: 'text/plain', path: INFER, headers: { 'content-type': 'text/plain' }, body: request(), status: 415, error: /expected Content-Type application\/json, got "text\/plain"/ },
  { name: 'text/plain;charset=UTF-8 (what fetch sends for a string)', path: INFER, headers: { 'content-type': 'text/plain;charset=UTF-8' }, body: request(), status: 415, error: /got "text\/plain;charset=UTF-8"/ },
  { name: 'form-urlencoded', path: INFER, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `inputs=${encodeURIComponent(json([features()]))}`, status: 415, error: /got "application\/x-www-form-urlencoded"/ },
  { name: 'multipart/form-data', path: INFER, headers: { 'content-type': 'multipart/form-data; boundary=xyz' }, body: `--xyz\r\nContent-Disposition: form-data; name="body"\r\n\r\n${request()}\r\n--xyz--\r\n`, status: 415, error: /got "multipart\/form-data; boundary=xyz"/ },
  { name: 'no content type', path: INFER, headers: { 'content-type': undefined }, body: request(), status: 415, error: /expected Content-Type application\/json, got none/ },
  { name: 'no content type and no body', path: INFER, headers: { 'content-type': undefined }, status: 415, error: /expected Content-Type application\/json, got none/ },
  { name: 'application/json-patch+json', path: INFER, headers: { 'content-type': 'application/json-patch+json' }, body: request(), status: 415, error: /got "application\/json-patch\+json"/ },
  { name: 'bare "json"', path: INFER, headers: { 'content-type': 'json' }, body: request(), status: 415, error: /got "json"/ },
  { name: 'gzip-compressed JSON (Content-Encoding: gzip)', path: INFER, headers: { 'content-encoding': 'gzip' }, body: gzipSync(request()), status: 415, error: /Content-Encoding.*gzip/i, responseHeaders: { 'accept-encoding': /identity/ } },
  { name: 'binary tensor extension with bytes no input claims', path: INFER, headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(request().length) }, body: Buffer.concat([Buffer.from(request()), Buffer.alloc(92)]), status: 400, error: /^92 bytes of binary data are claimed by no input's binary_data_size$/ },
  { name: 'binary tensor extension as text/plain', path: INFER, headers: { 'content-type': 'text/plain', 'inference-header-content-length': String(request().length) }, body: request(), status: 415, error: /expected Content-Type application\/octet-stream or application\/json with inference-header-content-length, got "text\/plain"/ },

  // --- Body size ------------------------------------------------------------------------------
  { name: '70 KB body with Content-Length', path: INFER, body: big(70 * 1024), status: 413, error: TOO_LARGE },
  { name: '70 KB body chunked (no Content-Length)', path: INFER, body: big(70 * 1024), chunked: true, status: 413, error: TOO_LARGE },
  { name: '70 KB text/plain body: size is refused before the media type', path: INFER, headers: { 'content-type': 'text/plain' }, body: big(70 * 1024), status: 413, error: TOO_LARGE },
  { name: '70 KB body to the repository index', path: INDEX, headers: AUTH, body: json({ ready: true, pad: 'x'.repeat(70 * 1024) }), status: 413, error: TOO_LARGE },

  // --- Top level not an object ----------------------------------------------------------------
  { name: 'empty array', path: INFER, body: '[]', status: 400, error: /^request body must be a JSON object, got an array$/ },
  { name: 'the request wrapped in an array', path: INFER, body: `[${request()}]`, status: 400, error: /^request body must be a JSON object, got an array$/ },
  { name: 'a string', path: INFER, body: '"hello"', status: 400, error: /^request body must be a JSON object, got the string "hello"$/ },
  { name: 'a number', path: INFER, body: '42', status: 400, error: /^request body must be a JSON object, got number 42$/ },
  { name: 'null', path: INFER, body: 'null', status: 400, error: /^request body must be a JSON object, got null$/ },
  { name: 'true', path: INFER, body: 'true', status: 400, error: /^request body must be a JSON object, got boolean true$/ },
  { name: 'double-encoded JSON (a string holding the request)', path: INFER, body: json(request()), status: 400, error: /^request body must be a JSON object, got the string "\{\\"inputs\\":/ },
  { name: 'arrays nested 30,000 deep', path: INFER, body: deepArray(30_000), status: 400, error: NOT_OBJECT },

  // --- Unknown top-level fields ---------------------------------------------------------------
  { name: 'typo "input"', path: INFER, body: json({ input: [features()] }), status: 400, error: /^request has an unknown field "input" \(allowed: id, parameters, inputs, outputs\)$/ },
  { name: '"__proto__" field', path: INFER, body: request().replace(/^\{/, '{"__proto__":{"polluted":true},'), status: 400, error: /^request has an unknown field "__proto__"/ },
  { name: 'response field "model_name" in a request',
 path: INFER, body: request({ model_name: 'credit-risk' }), status: 400, error: /^request has an unknown field "model_name"/ },
  { name: 'empty object', path: INFER, body: '{}', status: 400, error: /^inputs must be a non-empty array/ },

  // --- id ---------------------------------------------------------------------------------------
  { name: 'id is a number', path: INFER, body: request({ id: 42 }), status: 400, error: /^id must be a string of at most 256 characters/ },
  { name: 'id is null', path: INFER, body: request({ id: null }), status: 400, error: /^id must be a string/ },
  { name: 'id is an object', path: INFER, body: request({ id: { v: 1 } }), status: 400, error: /^id must be a string/ },
  { name: 'id is an array', path: INFER, body: request({ id: ['a'] }), status: 400, error: /^id must be a string/ },
  { name: 'id is a boolean', path: INFER, body: request({ id: true }), status: 400, error: /^id must be a string/ },
  { name: 'id of 257 characters', path: INFER, body: request({ id: 'i'.repeat(257) }), status: 400, error: /^id must be a string of at most 256 characters/ },

  // --- parameters -----------------------------------------------------------------------------
  { name: 'request.parameters is an array', path: INFER, body: request({ parameters: [1] }), status: 400, error: /^request\.parameters must be an object/ },
  { name: 'request.parameters is a string', path: INFER, body: request({ parameters: 'fast' }), status: 400, error: /^request\.parameters must be an object/ },
  { name: 'request.parameters is null', path: INFER, body: request({ parameters: null }), status: 400, error: /^request\.parameters must be an object/ },
  { name: 'request.parameters value is an object', path: INFER, body: request({ parameters: { priority: { level: 1 } } }), status: 400, error: /^request\.parameters\["priority"\] must be a string, number or boolean/ },
  { name: 'request.parameters value nested 10,000 deep', path: INFER, body: request({ parameters: { priority: MARK } }).replace(json(MARK), deepArray(10_000)), status: 400, error: /^request\.parameters\["priority"\] must be a string, number or boolean/ },
  { name: 'request.parameters key of 10,000 characters, quoted cut', path: INFER, body: request({ parameters: { ['k'.repeat(10_000)]: {} } }), status: 400, error: /^request\.parameters\["k{200}…" \(cut, 10000 characters\)\] must be a string, number or boolean$/ },
  { name: 'unknown field of 10,000 characters, quoted cut', path: INFER, body: request({ ['u'.repeat(10_000)]: 1 }), status: 400, error: /^request has an unknown field "u{200}…" \(cut, 10000 characters\) \(allowed/ },
  { name: 'request.parameters value is null', path: INFER, body: request({ parameters: { timeout: null } }), status: 400, error: /^request\.parameters\["timeout"\] must be a string, number or boolean/ },
  { name: 'request.parameters.__proto__ is an object', path: INFER, body: request().replace(/^\{/, '{"parameters":{"__proto__":{"admin":true}},'), status: 400, error: /^request\.parameters\["__proto__"\] must be a string, number or boolean/ },
  { name: 'inputs[0].parameters is an array', path: INFER, body: input({ parameters: [] }), status: 400, error: /^inputs\[0\]\.parameters must be an object/ },
  { name: 'inputs[0].parameters value is an object', path: INFER, body: input({ parameters: { content_type: { a: 1 } } }), status: 400, error: /^inputs\[0\]\.parameters\["content_type"\] must be a string, number or boolean/ },
  { name: 'outputs[0].parameters is a number', path: INFER, body: request({ outputs: [{ name: 'probabilities', parameters: 5 }] }), status: 400, error: /^outputs\[0\]\.parameters must be an object/ },

  // --- Binary tensor data extension -----------------------------------------------------------
  { name: 'binary_data_output that is not a boolean', path: INFER, body: request({ parameters: { binary_data_output: 'yes' } }), status: 400, error: /^request\.parameters\.binary_data_output must be true or false$/ },
  { name: 'binary_data_size on the request', path: INFER, body: request({ parameters: { binary_data_size: 4 } }), status: 400, error: /^request: binary_data_size is a parameter of the inputs, not of the request$/ },
  { name: 'binary_data on an input', path: INFER, body: input({ parameters: { binary_data: true } }), status: 400, error: /^inputs\[0\]: binary_data is a parameter of the outputs, not of the inputs$/ },
  { name: 'input declares binary_data_size in a plain JSON request', path: INFER, body: input({ parameters: { binary_data_size: 92 }, data: undefined }), status: 400, error: /^inputs\[0\]\.parameters\.binary_data_size needs a binary body/ },
  { name: 'input has both data and binary_data_size', path: INFER, body: input({ parameters: { binary_data_size: 92 } }), status: 400, error: /^input "features": both data and binary_data_size are present; send one$/ },
  { name: 'binary_data that is not a boolean', path: INFER, body: request({ outputs: [{ name: 'probabilities', parameters: { binary_data: 1 } }] }), status: 400, error: /^outputs\[0\]\.parameters\.binary_data must be true or false$/ },
  { name: 'binary_data_output on an output', path: INFER, body: request({ outputs: [{ name: 'probabilities', parameters: { binary_data_output: true } }] }), status: 400, error: /^outputs\[0\]: binary_data_output is a parameter of the request, not of the outputs$/ },

  // --- inputs -----------------------------------------------------------------------------------
  { name: 'inputs missing', path: INFER, body: json({ id: 'a' }), status: 400, error: /^inputs must be a non-empty array$/ },
  { name: 'inputs empty', path: INFER, body: json({ inputs: [] }), status: 400, error: /^inputs must be a non-empty array$/ },
  { name: 'inputs is an object', path: INFER, body: json({ inputs: features() }), status: 400, error: /^inputs must be a non-empty array$/ },
  { name: 'inputs is a string', path: INFER, body: json({ inputs: 'features' }), status: 400, error: /^inputs must be a non-empty array$/ },
  { name: 'inputs is null', path: INFER, body: json({ inputs: null }), status: 400, error: /^inputs must be a non-empty array$/ },
  { name: 'inputs[0] is null', path: INFER, body: json({ inputs: [null] }), status: 400, error: /^inputs\[0\] must be an object$/ },
  { name: 'inputs[0] is an array', path: INFER, body: json({ inputs: [[features()]] }), status: 400, error: /^inputs\[0\] must be an object$/ },
  { name: 'inputs[0] is a string', path: INFER, body: json({ inputs: ['features'] }), status: 400, error: /^inputs\[0\] must be an object$/ },
  { name: 'inputs[1] is a number after a valid input', path: MIXED, body: json({ inputs: [ids(), 7] }), status: 400, error: /^inputs\[1\] must be an object$/ },
  { name: 'input name missing', path: INFER, body: inputWithout('name'), status: 400, error: /^inputs\[0\]\.name must be a string$/ },
  { name: 'input name is a number', path: INFER, body: input({ name: 0 }), status: 400, error: /^inputs\[0\]\.name must be a string$/ },
  { name: 'unknown input name', path: INFER, body: input({ name: 'feature' }), status: 400, error: /^unknown input "feature"; the model takes "features"$/ },
  { name: 'input name in the wrong case', path: INFER, body: input({ name: 'Features' }), status: 400, error: /^unknown input "Features"; the model takes "features"$/ },
  { name: 'input named "constructor"', path: INFER, body: input({ name: 'constructor' }), status: 400, error: /^unknown input "constructor"; the model takes "features"$/ },
  { name: 'input named "__proto__"', path: INFER, body: input({ name: '__proto__' }), status: 400, error: /^unknown input "__proto__"; the model takes "features"$/ },
  { name: 'input has an unknown field "dims"', path: INFER, body: input({ dims: [1, D] }), status: 400, error: /^inputs\[0\] has an unknown field "dims" \(allowed: name, shape, datatype, parameters, data\)$/ },
  { name: 'duplicate input', path: INFER, body: json({ inputs: [features(), features()] }), status: 400, error: /^input "features" appears more than once$/ },
  { name: 'missing required input "mask"', path: MIXED, body: json({ inputs: [ids()] }), status: 400, error: /^missing input "mask"$/ },
  { name: 'inputs disagree on the batch dimension', path: MIXED, body: mixed({}, { shape: [1, 3], data: [true, false, true] }), status: 400, error: /^inputs disagree on the batch dimension \(2 vs 1\)$/ },

  // --- datatype -------------------------------------------------------------------------------
  { name: 'datatype FP64 for an FP32 input', path: INFER, body: input({ datatype: 'FP64' }), status: 400, error: /^input "features": datatype .*"FP64".* does not match the model's FP32$/ },
  { name: 'datatype INT32 for an FP32 input', path: INFER, body: input({ datatype: 'INT32' }), status: 400, error: /^input "features": datatype .*"INT32".* does not match the model's FP32$/ },
  { name: 'lower-case datatype "fp32"', path: INFER, body: input({ datatype: 'fp32' }), status: 400, error: /^input "features": datatype .*"fp32".* does not match the model's FP32$/ },
  { name: 'invalid datatype "FLOAT32"', path: INFER, body: input({ datatype: 'FLOAT32' }), status: 400, error: /^input "features": datatype .*"FLOAT32".* does not match the model's FP32$/ },
  { name: 'datatype is a number', path: INFER, body: input({ datatype: 11 }), status: 400, error: /^input "features": datatype number 11 does not match the model's FP32$/ },
  { name: 'datatype is null', path: INFER, body: input({ datatype: null }), status: 400, error: /^input "features": datatype null does not match the model's FP32$/ },
  { name: 'datatype missing', path: INFER, body: inputWithout('datatype'), status: 400, error: /^input "features": datatype (is )?missing\b.*\bFP32$/ },
  { name: 'INT32 for the INT64 input', path: MIXED, body: mixed({ datatype: 'INT32' }), status: 400, error: /^input "ids": datatype .*"INT32".* does not match the model's INT64$/ },
  { name: 'UINT8 for the BOOL input', path: MIXED, body: mixed({}, { datatype: 'UINT8' }), status: 400, error: /^input "mask": datatype .*"UINT8".* does not match the model's BOOL$/ },
  { name: 'STRING for the BYTES input', path: TAGS, body: tags(['a', 'b'], { datatype: 'STRING' }), status: 400, error: /^input "tags": datatype .*"STRING".* does not match the model's BYTES$/ },

  // --- shape ------------------------------------------------------------------------------------
  { name: 'shape missing', path: INFER, body: inputWithout('shape'), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape is a string', path: INFER, body: input({ shape: '[1,23]' }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape is an object', path: INFER, body: input({ shape: { rows: 1, cols: D } }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape with -1 (a metadata wildcard, not a request size)', path: INFER, body: input({ shape: [-1, D] }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape with a negative inner dimension', path: INFER, body: input({ shape: [1, -23] }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape with a fractional dimension', path: INFER, body: input({ shape: [1.5, D] }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape with string dimensions', path: INFER, body: input({ shape: ['1', '23'] }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape with a null dimension', path: INFER, body: input({ shape: [null, D] }), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape with 1e999 (Infinity)', path: INFER, body: input({ shape: [MARK, D] }).replace(json(MARK), '1e999'), status: 400, error: /^input "features": shape must be an array of non-negative integers$/ },
  { name: 'shape of rank 1', path: INFER, body: input({ shape: [D] }), status: 400, error: /^input "features": shape \[23\] does not match the model's \[-1,23\]/ },
  { name: 'shape of rank 3', path: INFER, body: input({ shape: [1, D, 1] }), status: 400, error: /^input "features": shape \[1,23,1\] does not match the model's \[-1,23\]/ },
  { name: 'empty shape', path: INFER, body: input({ shape: [], data: [1] }), status: 400, error: /^input "features": shape \[\] does not match the model's \[-1,23\]/ },
  { name: 'wrong inner dimension (22)', path: INFER, body: input({ shape: [1, 22], data: flat(1).slice(0, 22) }), status: 400, error: /^input "features": shape \[1,22\] does not match the model's \[-1,23\]/ },
  { name: 'batch dimension 0', path: INFER, body: input({ shape: [0, D], data: [] }), status: 400, error: /^input "features": batch dimension must be at least 1$/ },
  { name: `batch dimension ${MAX_REQUEST_ROWS + 1} (over MAX_REQUEST_ROWS)`, path: INFER, body: input({ shape: [MAX_REQUEST_ROWS + 1, D], data: flat(MAX_REQUEST_ROWS + 1) }), status: 400, error: new RegExp(`^input "features": batch dimension ${MAX_REQUEST_ROWS + 1} exceeds the limit of ${MAX_REQUEST_ROWS} rows per request$`) },
  { name: 'batch dimension 10^15 with one row of data', path: INFER, body: input({ shape: [1e15, D] }), status: 400, error: /^input "features": batch dimension 1000000000000000 exceeds the limit of 100 rows per request$/ },
  { name: 'model without a batch dimension: shape [2,4]', path: FIXED, body: tinyFixed([2, 4], [...Array(8).keys()]), status: 400, error: /^input "features": shape \[2,4\] does not match the model's \[1,4\]/ },
  { name: 'model without a batch dimension: shape [4]', path: FIXED, body: tinyFixed([4]), status: 400, error: /^input "features": shape \[4\] does not match the model's \[1,4\]/ },

  // --- data length and structure ----------------------------------------------------------------
  { name: 'flat data one element short', path: INFER, body: input({ shape: [2, D], data: flat(2).slice(0, 2 * D - 1) }), status: 400, error: /^input "features": shape \[2,23\] needs 46 elements, data has 45$/ },
  { name: 'flat data one element long', path: INFER, body: input({ shape: [2, D], data: [...flat(2), 0] }), status: 400, error: /^input "features": shape \[2,23\] needs 46 elements, data has 47$/ },
  { name: 'flat data of two rows for shape [1,23]', path: INFER, body: input({ data: flat(2) }), status: 400, error: /^input "features": shape \[1,23\] needs 23 elements, data has 46$/ },
  { name: 'empty data', path: INFER, body: input({ data: [] }), status: 400, error: /^input "features": shape \[1,23\] needs 23 elements, data has 0$/ },
  { name: 'data missing', path: INFER, body: inputWithout('data'), status: 400, error: /^input "features": data must be an array$/ },
  { name: 'data is an object', path: INFER, body: input({ data: { 0: 1 } }), status: 400, error: /^input "features": data must be an array$/ },
  { name: 'data is a string', path: INFER, body: input({ data: json(flat(1)) }), status: 400, error: /^input "features": data must be an array$/ },
  { name: 'data is a number', path: INFER, body: input({ data: 0.5 }), status: 400, error: /^input "features": data must be an array$/ },
  { name: 'nested data with a ragged row', path: INFER, body: input({ shape: [2, D], data: [row(0), row(1).slice(1)] }), status: 400, error: /^input "features": data\[1\] has 22 elements, shape \[2,23\] needs 23$/ },
  { name: 'nested data one level too deep', path: INFER, body: input({ data: [row(0).map((v) => [v])] }), status: 400, error: /^input "features": data\[0\]\[0\] is an array, expected a finite number/ },
  { name: 'nested data with fewer rows than the shape', path: INFER, body: input({ shape: [2, D], data: nested(1) }), status: 400, error: /^input "features": data has 1 elements?, shape \[2,23\] needs 2$/ },
  { name: 'nested data with a scalar where a row belongs', path: INFER, body: input({ shape: [2, D], data: [row(0), 5] }), status: 400, error: /^input "features": data\[1\] is number 5, expected an array of 23/ },
  { name: 'flat data with an array at index 1', path: INFER, body: valueAt(1, [0.5]), status: 400, error: /^input "features": data\[1\] is an array, expected a finite number/ },
  { name: 'nested data with a string element', path: INFER, body: input({ shape: [2, D], data: [row(0), row(1).map((v, i) => (i === 5 ? '0.5' : v))] }), status: 400, error: /^input "features": data\[1\]\[5\] is the string "0\.5", expected a finite number/ },
  { name: 'nested data wrapped in one array too many', path: INFER, body: input({ data: [nested(1)] }), status: 400, error: /^input "features": data\[0\] has 1 elements?, shape \[1,23\] needs 23$/ },
  { name: 'data nested 20,000 deep', path: INFER, body: input({ data: MARK }).replace(json(MARK), deepArray(20_000)), status: 400, error: /^input "features": data\[0\] has 1 elements?, shape \[1,23\] needs 23$/ },

  // --- Elements of the wrong type or range (FP32) -----------------------------------------------
  { name: 'string number "0.5"', path: INFER, body: valueAt(7, '0.5'), status: 400, error: /^input "features": data\[7\] is the string "0\.5", expected a finite number$/ },
  { name: 'null element', path: INFER, body: valueAt(0, null), status: 400, error: /^input "features": data\[0\] is null, expected a finite number$/ },
  { name: 'boolean true element', path: INFER, body: valueAt(3, true), status: 400, error: /^input "features": data\[3\] is boolean true, expected a finite number$/ },
  { name: 'boolean false element', path: INFER, body: valueAt(22, false), status: 400, error: /^input "features": data\[22\] is boolean false, expected a finite number$/ },
  { name: 'object element', path: INFER, body: valueAt(4, { value: 1 }), status: 400, error: /^input "features": data\[4\] is an object, expected a finite number$/ },
  { name: 'string "NaN" for an input that refuses non-finite values', path: INFER, body: valueAt(2, 'NaN'), status: 400, error: /^input "features": data\[2\] is the string "NaN", expected a finite number$/ },
  { name: 'very long string element (message stays short)', path: INFER, body: valueAt(9, 'z'.repeat(5000)), status: 400, error: /^input "features": data\[9\] is the string "z{200}…" \(cut, 5000 characters\), expected a finite number$/ },
  { name: '1e999 (overflows to Infinity)', path: INFER, body: literalAt(6, '1e999'), status: 400, error: /^input "features": data\[6\] is number Infinity, expected a finite number \(a literal this large overflows to Infinity\)$/ },
  { name: '-1e999 (overflows to -Infinity)', path: INFER, body: literalAt(6, '-1e999'), status: 400, error: /^input "features": data\[6\] is number -Infinity, expected a finite number/ },
  { name: '3.5e38 (beyond FP32)', path: INFER, body: literalAt(8, '3.5e38'), status: 400, error: /^input "features": data\[8\] is number 3\.5e\+38, expected a number within FP32 range \(±3\.4028234663852886e\+38\)$/ },
  { name: '-3.5e38 (beyond FP32)', path: INFER, body: literalAt(8, '-3.5e38'), status: 400, error: /^input "features": data\[8\] is number -3\.5e\+38, expected a number within FP32 range/ },
  { name: '1e308 (an FP64 value, beyond FP32)', path: INFER, body: literalAt(0, '1e308'), status: 400, error: /^input "features": data\[0\] is number 1e\+308, expected a number within FP32 range/ },
  { name: 'bad element in the second row of flat data (index 30)', path: INFER, body: valueAt(30, 'x', 2), status: 400, error: /^input "features": data\[30\] is the string "x", expected a finite number$/ },
  { name: 'non-finite input: "nan" is not one of the accepted spellings', path: NON_FINITE, body: tinyNan([0, 'nan', 0, 0]), status: 400, error: /^input "features": data\[1\] is the string "nan", expected a number, "NaN", "Infinity" or "-Infinity"$/ },
  { name: 'non-finite input: null element', path: NON_FINITE, body: tinyNan([0, 0, null, 0]), status: 400, error: /^input "features": data\[2\] is null, expected a number, "NaN", "Infinity" or "-Infinity"$/ },

  // --- INT64, BOOL and BYTES elements -----------------------------------------------------------
  { name: 'INT64: fractional value', path: MIXED, body: idsValueAt(1, 1.5), status: 400, error: /^input "ids": data\[1\] is number 1\.5, expected an integer \(INT64\)$/ },
  { name: 'INT64: 2^53 (not exactly representable in JSON numbers)', path: MIXED, body: idsLiteralAt(2, '9007199254740992'), status: 400, error: /^input "ids": data\[2\] is number 9007199254740992, expected an integer within .*\[-9007199254740991, 9007199254740991\]$/ },
  { name: 'INT64: 2^63 - 1 literal', path: MIXED, body: idsLiteralAt(0, '9223372036854775807'), status: 400, error: /^input "ids": data\[0\] is number 9223372036854776000, expected an integer within .*\[-9007199254740991, 9007199254740991\]$/ },
  { name: 'INT64: -2^53', path: MIXED, body: idsLiteralAt(5, '-9007199254740992'), status: 400, error: /^input "ids": data\[5\] is number -9007199254740992, expected an integer within/ },
  { name: 'INT64: string "5"', path: MIXED, body: idsValueAt(3, '5'), status: 400, error: /^input "ids": data\[3\] is the string "5", expected an integer \(INT64\)$/ },
  { name: 'INT64: 1e999', path: MIXED, body: idsLiteralAt(4, '1e999'), status: 400, error: /^input "ids": data\[4\] is number Infinity, expected an integer \(INT64\)$/ },
  { name: 'INT64: boolean', path: MIXED, body: idsValueAt(0, true), status: 400, error: /^input "ids": data\[0\] is boolean true, expected an integer \(INT64\)$/ },
  { name: 'BOOL: number 1', path: MIXED, body: maskValueAt(0, 1), status: 400, error: /^input "mask": data\[0\] is number 1, expected true or false$/ },
  { name: 'BOOL: string "true"', path: MIXED, body: maskValueAt(4, 'true'), status: 400, error: /^input "mask": data\[4\] is the string "true", expected true or false$/ },
  { name: 'BOOL: null', path: MIXED, body: maskValueAt(5, null), status: 400, error: /^input "mask": data\[5\] is null, expected true or false$/ },
  { name: 'BYTES: number element', path: TAGS, body: tags(['a', 5]), status: 400, error: /^input "tags": data\[1\] is number 5, expected a string$/ },
  { name: 'BYTES: null element', path: TAGS, body: tags([null, 'b']), status: 400, error: /^input "tags": data\[0\] is null, expected a string$/ },

  // --- outputs ----------------------------------------------------------------------------------
  { name: 'unknown output name', path: INFER, body: request({ outputs: [{ name: 'prob' }] }), status: 400, error: /^unknown output .*"prob"; the model has "probabilities"$/ },
  { name: 'an input name requested as output', path: INFER, body: request({ outputs: [{ name: 'features' }] }), status: 400, error: /^unknown output .*"features"; the model has "probabilities"$/ },
  { name: 'output named "toString"', path: INFER, body: request({ outputs: [{ name: 'toString' }] }), status: 400, error: /^unknown output .*"toString"; the model has "probabilities"$/ },
  { name: 'duplicate output', path: INFER, body: request({ outputs: [{ name: 'probabilities' }, { name: 'probabilities' }] }), status: 400, error: /^output "probabilities" is requested more than once$/ },
  { name: 'outputs is a string', path: INFER, body: request({ outputs: 'probabilities' }), status: 400, error: /^outputs must be a non-empty array when present$/ },
  { name: 'outputs is an object', path: INFER, body: request({ outputs: { name: 'probabilities' } }), status: 400, error: /^outputs must be a non-empty array when present$/ },
  { name: 'outputs empty', path: INFER, body: request({ outputs: [] }), status: 400, error: /^outputs must be a non-empty array when present$/ },
  { name: 'outputs null', path: INFER, body: request({ outputs: null }), status: 400, error: /^outputs must be a non-empty array when present$/ },
  { name: 'outputs[0] is a bare string', path: INFER, body: request({ outputs: ['probabilities'] }), status: 400, error: /^outputs\[0\] must be an object$/ },
  { name: 'outputs[0] has no name', path: INFER, body: request({ outputs: [{}] }), status: 400, error: /^outputs\[0\]\.name (must be a string|is missing)/ },
  { name: 'outputs[0].name is a number', path: INFER, body: request({ outputs: [{ name: 5 }] }), status: 400, error: /^(unknown output number 5; the model has "probabilities"|outputs\[0\]\.name must be a string)$/ },
  { name: 'outputs[0] has an unknown field', path: INFER, body: request({ outputs: [{ name: 'probabilities', datatype: 'FP32' }] }), status: 400, error: /^outputs\[0\] has an unknown field "datatype" \(allowed: name, parameters\)$/ },

  // --- X-Request-Deadline-Ms ----------------------------------------------------------------------
  ...['0', '-5', 'soon', '3600001', '99999999999', '1.5', '1e3', '0x10', ''].map((value): BadCase => ({
    name: `deadline header ${JSON.stringify(value)}`, path: INFER, headers: { 'x-request-deadline-ms': value }, body: request(), status: 400, error: DEADLINE,
  })),
  { name: 'deadline header sent twice', path: INFER, headers: { 'x-request-deadline-ms': ['100', '200'] }, body: request(), status: 400, error: DEADLINE },

  // --- Unknown models and versions -----------------------------------------------------------------
  { name: 'infer on an unknown model', path: '/v2/models/no-such-model/infer', body: request(), status: 404, error: /^unknown model "no-such-model"$/ },
  { name: 'model name in the wrong case', path: '/v2/models/Credit-Risk/infer', body: request(), status: 404, error: /^unknown model "Credit-Risk"$/ },
  { name: 'NUL byte in the model name (%00)', path: '/v2/models/credit-risk%00/infer', body: request(), status: 404, error: /^unknown model "credit-risk\\u0000"$/ },
  { name: 'broken percent-encoding in the model name (%ZZ)', path: '/v2/models/%ZZ/infer', body: request(), status: 404, error: /^unknown model "%ZZ"$/ },
  { name: 'model name of 2,000 characters', method: 'GET', path: `/v2/models/${'m'.repeat(2000)}`, status: 404, error: /^unknown model "m{200}…" \(cut, 2000 characters\)$/ },
  { name: 'metadata of an unknown model', method: 'GET', path: '/v2/models/no-such-model', status: 404, error: /^unknown model "no-such-model"$/ },
  { name: 'readiness of an unknown model', method: 'GET', path: '/v2/models/no-such-model/ready', status: 404, error: /^unknown model "no-such-model"$/ },
  { name: 'infer on an unknown version', path: '/v2/models/credit-risk/versions/9/infer', body: request(), status: 404, error: /^model "credit-risk" has no version 9 available$/ },
  { name: 'metadata of an unknown version', method: 'GET', path: '/v2/models/credit-risk/versions/9', status: 404, error: /^model "credit-risk" has no version 9/ },
  { name: 'readiness of an unknown version', method: 'GET', path: '/v2/models/credit-risk/versions/9/ready', status: 404, error: /model "credit-risk" has no version 9/ },
  { name: 'statistics of an unknown version', method: 'GET', path: '/v2/models/credit-risk/versions/9/stats', status: 404, error: /model "credit-risk" (has no )?version 9/ },
  ...['abc', '0', '01', '-1', '1.0', 'latest', '1e1'].map((v): BadCase => ({
    name: `non-numeric or non-positive version "${v}"`, path: `/v2/models/credit-risk/versions/${v}/infer`, body: request(), status: 400, error: new RegExp(`^version "${v.replace('.', '\\.')}" is not a version number`),
  })),
  { name: 'metadata of version "latest"', method: 'GET', path: '/v2/models/credit-risk/versions/latest', status: 400, error: /^version "latest" is not a version number/ },
  { name: 'statistics of version "0"', method: 'GET', path: '/v2/models/credit-risk/versions/0/stats', status: 400, error: /^version "0" is not a version number/ },
  { name: 'version path injection (..%2F..%2F)', path: '/v2/models/credit-risk/versions/..%2F..%2Fcredit-risk/infer', body: request(), status: 400, error: /^version "\.\.\/\.\.\/credit-risk" is not a version number/ },
  { name: 'model path injection (..%2F)', path: '/v2/models/..%2Fcredit-risk/infer', body: request(), status: 404, error: /^unknown model "\.\.\/credit-risk"$/ },
  { name: 'model path injection to an absolute path (%2Fetc%2Fpasswd)', method: 'GET', path: '/v2/models/%2Fetc%2Fpasswd', status: 404, error: /^unknown model "\/etc\/passwd"$/ },
  { name: 'dot segments cannot climb out of the API', method: 'GET', path: '/v2/models/../../../etc/passwd', status: 404, error: /^no route for GET \/etc\/passwd$/ },
  { name: 'percent-encoded dot segments', path: '/v2/models/%2e%2e/infer', body: request(), status: 404, error: /^no route for POST \/v2\/infer$/ },
  { name: 'backslash in the path', method: 'GET', path: '/v2/models/..\\credit-risk', status: 400, error: /path|URL/i },
  { name: 'Host header that is not a host', method: 'GET', path: '/v2/health/live', headers: { host: 'a@b' }, status: 400, error: /host/i },

  // --- Unknown routes -----------------------------------------------------------------------------
  { name: 'GET /', method: 'GET', path: '/', status: 404, error: /^no route for GET \/$/ },
  { name: 'GET /v2/nope', method: 'GET', path: '/v2/nope', status: 404, error: /^no route for GET \/v2\/nope$/ },
  { name: 'GET /v1/models (the edge API, not this server)', method: 'GET', path: '/v1/models', status: 404, error: /^no route for GET \/v1\/models$/ },
  { name: 'POST .../predict', path: '/v2/models/credit-risk/predict', body: request(), status: 404, error: /^no route for POST \/v2\/models\/credit-risk\/predict$/ },
  { name: 'POST .../infer/extra', path: '/v2/models/credit-risk/versions/1/infer/extra', body: request(), status: 404, error: /^no route for POST \/v2\/models\/credit-risk\/versions\/1\/infer\/extra$/ },
  { name: 'POST with an empty model segment', path: '/v2/models//infer', body: request(), status: 404, error: /^no route for POST \/v2\/models\/\/infer$/ },
  { name: 'upper-case /V2', method: 'GET', path: '/V2/health/live', status: 404, error: /^no route for GET \/V2\/health\/live$/ },

  // --- Repository API -----------------------------------------------------------------------------
  { name: 'index without a token', path: INDEX, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with a wrong token', path: INDEX, headers: { authorization: 'Bearer not-the-admin-token-at-all' }, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with the token plus a suffix', path: INDEX, headers: { authorization: `Bearer ${TOKEN}x` }, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with a prefix of the token', path: INDEX, headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}` }, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with "Bearer" and no token', path: INDEX, headers: { authorization: 'Bearer' }, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with the token as Basic credentials', path: INDEX, headers: { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` }, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with the token in a query string', path: `${INDEX}?token=${TOKEN}`, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with two tokens', path: INDEX, headers: { authorization: `Bearer ${TOKEN} ${TOKEN}` }, body: '{}', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'load without a token', path: '/v2/repository/models/credit-risk/load', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'unload with a wrong token', path: '/v2/repository/models/credit-risk/unload', headers: { authorization: 'Bearer wrong-wrong-wrong-wrong' }, status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'no token and malformed JSON: authentication comes first', path: INDEX, body: '{"ready":', status: 401, error: UNAUTHORIZED, responseHeaders: BEARER },
  { name: 'index with malformed JSON', path: INDEX, headers: AUTH, body: '{"ready": tru}', status: 400, error: /^malformed JSON: / },
  { name: 'index with "ready" as a string', path: INDEX, headers: AUTH, body: json({ ready: 'yes' }), status: 400, error: /^"ready" must be a boolean$/ },
  { name: 'index with "ready" as a number', path: INDEX, headers: AUTH, body: json({ ready: 1 }), status: 400, error: /^"ready" must be a boolean$/ },
  { name: 'index with "ready" null', path: INDEX, headers: AUTH, body: json({ ready: null }), status: 400, error: /^"ready" must be a boolean$/ },
  { name: 'index body is an array', path: INDEX, headers: AUTH, body: '[]', status: 400, error: /^index body must be a JSON object$/ },
  { name: 'index body is a string', path: INDEX, headers: AUTH, body: '"ready"', status: 400, error: /^index body must be a JSON object$/ },
  { name: 'index with a misspelt field ("readdy")', path: INDEX, headers: AUTH, body: json({ readdy: true }), status: 400, error: /unknown field "readdy"/ },
  { name: 'index with a text/plain body', path: INDEX, headers: { ...AUTH, 'content-type': 'text/plain' }, body: 'ready=true', status: 415, error: /got "text\/plain"/ },
  { name: 'load an unknown model', path: '/v2/repository/models/no-such-model/load', headers: AUTH, status: 404, error: /^unknown model "no-such-model"$/ },
  { name: 'unload an unknown model', path: '/v2/repository/models/no-such-model/unload', headers: AUTH, status: 404, error: /^unknown model "no-such-model"$/ },
  { name: 'load with path injection (..%2F)', path: '/v2/repository/models/..%2Fcredit-risk/load', headers: AUTH, status: 404, error: /^unknown model "\.\.\/credit-risk"$/ },
  { name: 'load with malformed JSON body', path: '/v2/repository/models/credit-risk/load', headers: AUTH, body: '{', status: 400, error: /^malformed JSON: / },
  { name: 'unknown repository action', path: '/v2/repository/models/credit-risk/delete', headers: AUTH, status: 404, error: /^no route for POST \/v2\/repository\/models\/credit-risk\/delete$/ },
]

// ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  fixture = await createFixtureRepository()
  await addMixedModel(fixture.root)
  await addTagsModel(fixture.root)
  await fixture.addModel('tiny-fixed', {
    config(config) {
      // No batch dimension: the request shape must be exactly [1, 4].
      config.max_batch_size = 0
      delete config.dynamic_batching
      config.execution_providers = ['cpu']
      ;(config.inputs as Array<Record<string, unknown>>)[0].dims = [1, 4]
      ;(config.outputs as Array<Record<string, unknown>>)[0].dims = [1, 2]
    },
  })
  await fixture.addModel('tiny-nan', {
    config(config) {
      config.execution_providers = ['cpu']
      ;(config.inputs as Array<Record<string, unknown>>)[0].allow_non_finite = true
    },
  })
  backend = await startBackend({
    MODEL_REPOSITORY: fixture.root,
    ADMIN_TOKEN: TOKEN,
    MAX_BODY_BYTES: String(MAX_BODY_BYTES),
    MAX_REQUEST_ROWS: String(MAX_REQUEST_ROWS),
  })
  // The extra models load lazily; load them now so every case meets a ready model.
  for (const model of ['mixed', 'tags', 'tiny-fixed', 'tiny-nan']) {
    const res = await send({ path: `/v2/repository/models/${model}/load`, headers: AUTH })
    if (res.status !== 200) throw new Error(`loading ${model}: ${res.status} ${res.text}`)
  }
})

afterAll(async () => {
  await backend?.stop()
  await fixture?.remove()
})

interface InferAnswer {
  model_name: string
  model_version: string
  id: string
  outputs: Array<{ name: string; shape: number[]; datatype: string; data: unknown[] }>
}

const ok = async (sent: Sent): Promise<InferAnswer> => {
  const res = await send(sent)
  expect(res.status, res.text).toBe(200)
  return JSON.parse(res.text) as InferAnswer
}

describe('positive controls: the same request shapes are accepted when correct', () => {
  it('flat data', async () => {
    const answer = await ok({ path: INFER, body: input({ shape: [2, D], data: flat(2) }) })
    expect(answer.model_name).toBe('credit-risk')
    expect(answer.outputs).toHaveLength(1)
    expect(answer.outputs[0]).toMatchObject({ name: 'probabilities', shape: [2, 2], datatype: 'FP32' })
    const p = answer.outputs[0].data as number[]
    expect(p[0] + p[1]).toBeCloseTo(1, 5)
  })

  it('nested data gives the same answer as flat data', async () => {
    const flatAnswer = await ok({ path: INFER, body: input({ shape: [3, D], data: flat(3) }) })
    const nestedAnswer = await ok({ path: INFER, body: input({ shape: [3, D], data: nested(3) }) })
    expect(nestedAnswer.outputs[0].shape).toEqual([3, 2])
    expect(nestedAnswer.outputs[0].data).toEqual(flatAnswer.outputs[0].data)
  })

  it('explicit outputs, id echo, scalar parameters and a valid deadline', async () => {
    const answer = await ok({
      path: INFER,
      headers: { 'x-request-deadline-ms': '30000' },
      body: request({ id: 'req-42', parameters: { priority: 1, note: 'x', trace: true }, outputs: [{ name: 'probabilities', parameters: {} }] }),
    })
    expect(answer.id).toBe('req-42')
    expect(answer.outputs.map((o) => o.name)).toEqual(['probabilities'])
  })

  it('an id of exactly 256 characters is echoed', async () => {
    const id = 'i'.repeat(256)
    expect((await ok({ path: INFER, body: request({ id }) })).id).toBe(id)
  })

  it('a pinned version, a case-insensitive media type with charset, and FP32 extremes', async () => {
    const answer = await ok({
      path: '/v2/models/credit-risk/versions/1/infer',
      headers: { 'content-type': 'Application/JSON; charset=UTF-8' },
      body: literals({ 8: '3.4e38', 9: '-3.4e38', 10: '1e-50' }),
    })
    expect(answer.model_version).toBe('1')
  })

  it('one leading BOM is ignored (RFC 8259 §8.1 lets parsers ignore it)', async () => {
    await ok({ path: INFER, body: BOM + request() })
  })

  it(`a request of exactly MAX_REQUEST_ROWS (${MAX_REQUEST_ROWS}) rows, more than max_batch_size, is split and answered whole`, async () => {
    const answer = await ok({ path: INFER, body: input({ shape: [MAX_REQUEST_ROWS, D], data: nested(MAX_REQUEST_ROWS) }) })
    expect(answer.outputs[0].shape).toEqual([MAX_REQUEST_ROWS, 2])
  })

  it('INT64 and BOOL inputs, both outputs and one chosen output', async () => {
    const both = await ok({ path: MIXED, body: mixed() })
    expect(both.outputs).toEqual([
      { name: 'masked', shape: [2, 3], datatype: 'INT64', data: [1, 0, 3, 0, 5, 6] },
      { name: 'mask_echo', shape: [2, 3], datatype: 'BOOL', data: [true, false, true, false, true, true] },
    ])
    const one = await ok({ path: MIXED, body: json({ inputs: [ids({ data: [[1, 2, 3], [4, 5, 6]] }), mask()], outputs: [{ name: 'mask_echo' }] }) })
    expect(one.outputs.map((o) => o.name)).toEqual(['mask_echo'])
  })

  it('INT64 at the edge of the safe range', async () => {
    const answer = await ok({ path: MIXED, body: mixed({ data: [9007199254740991, -9007199254740991, 0, 1, -1, 2] }, { data: [true, true, true, true, true, true] }) })
    expect(answer.outputs[0].data).toEqual([9007199254740991, -9007199254740991, 0, 1, -1, 2])
  })

  it('BYTES input', async () => {
    const answer = await ok({ path: TAGS, body: tags(['alpha', 'βeta ✓']) })
    expect(answer.outputs[0]).toMatchObject({ name: 'tags_out', datatype: 'BYTES', data: ['alpha', 'βeta ✓'] })
  })

  it('a model without a batch dimension takes its exact shape', async () => {
    const answer = await ok({ path: FIXED, body: tinyFixed([1, 4]) })
    expect(answer.outputs[0].shape).toEqual([1, 2])
  })

  it('an input that admits non-finite values takes "NaN", "Infinity", "-Infinity"', async () => {
    await ok({ path: NON_FINITE, body: tinyNan(['NaN', 'Infinity', '-Infinity', 1]) })
  })

  it('repository index with the token, with and without a body', async () => {
    const all = await send({ path: INDEX, headers: { ...AUTH, 'content-type': undefined } })
    expect(all.status, all.text).toBe(200)
    expect(Array.isArray(JSON.parse(all.text))).toBe(true)
    const ready = await send({ path: INDEX, headers: { authorization: `bearer ${TOKEN}` }, body: json({ ready: true }) })
    expect(ready.status, ready.text).toBe(200)
    const entries = JSON.parse(ready.text) as Array<{ name: string; state: string }>
    expect(entries.every((e) => e.state === 'READY')).toBe(true)
    expect(entries.map((e) => e.name)).toContain('credit-risk')
  })
})

describe('bad input corpus', () => {
  it(`holds at least 110 distinct cases (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(110)
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length)
  })

  for (const c of cases) {
    it(`${c.method ?? 'POST'} ${c.path.length > 60 ? `${c.path.slice(0, 60)}…` : c.path}: ${c.name} → ${c.status}`, async () => {
      const res = await send(c)
      const message = errorOf(res)
      expect({ status: res.status, error: message }).toEqual({ status: c.status, error: expect.stringMatching(c.error) })
      for (const [header, pattern] of Object.entries(c.responseHeaders ?? {})) {
        expect(String(res.headers[header] ?? ''), `response header ${header}`).toMatch(pattern)
      }
    })
  }
})

describe('after the corpus', () => {
  it('the server is still alive and still serves a valid request', async () => {
    expect(backend.child.exitCode).toBeNull()
    expect(backend.child.signalCode).toBeNull()
    const live = await send({ method: 'GET', path: '/v2/health/live' })
    expect(live.status).toBe(200)
    const ready = await send({ method: 'GET', path: '/v2/health/ready' })
    expect(ready.status).toBe(200)
    const answer = await ok({ path: INFER, body: request({ id: 'after-the-corpus' }) })
    expect(answer.id).toBe('after-the-corpus')
    expect(answer.outputs[0].shape).toEqual([1, 2])
  })

  it('no request reached the generic 500 handler', () => {
    expect(backend.logs.filter((l) => l.msg === 'unhandled error')).toEqual([])
  })
})
