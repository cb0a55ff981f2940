import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Datatype } from '../../../shared/datatypes.ts'
import { writeModelConfig, writeModelVersion } from '../../../tools/training/repository-writer.ts'
import { startBackend, type BackendProcess } from '../support/backend-process.ts'
import { createFixtureRepository, type FixtureRepository } from '../support/fixture-repository.ts'
import { type ElemType, encodeModel, tensorInfo } from '../support/onnx-graph.ts'

// The binary tensor data extension against the real server: a JSON header of
// Inference-Header-Content-Length bytes, then each binary input's (or output's) raw little-endian data.

const MAX_BODY_BYTES = 65_536

/** Every datatype with its ONNX element type and two sample values, as bytes and as the JSON answer gives them back. */
const SAMPLES: ReadonlyArray<{ datatype: Datatype; onnxType: ElemType; bytes: () => Uint8Array; answer: unknown[] }> = [
  { datatype: 'FP32', onnxType: 'FLOAT', bytes: () => bytesOf(new Float32Array([1.5, -0.25])), answer: [1.5, -0.25] },
  { datatype: 'FP64', onnxType: 'DOUBLE', bytes: () => bytesOf(new Float64Array([0.1, -1e300])), answer: [0.1, -1e300] },
  // 0x3c00 is 1, 0xc000 is -2 in half precision.
  { datatype: 'FP16', onnxType: 'FLOAT16', bytes: () => bytesOf(new Uint16Array([0x3c00, 0xc000])), answer: [1, -2] },
  { datatype: 'INT8', onnxType: 'INT8', bytes: () => bytesOf(new Int8Array([-128, 127])), answer: [-128, 127] },
  { datatype: 'UINT8', onnxType: 'UINT8', bytes: () => bytesOf(new Uint8Array([0, 255])), answer: [0, 255] },
  { datatype: 'INT16', onnxType: 'INT16', bytes: () => bytesOf(new Int16Array([-32768, 7])), answer: [-32768, 7] },
  { datatype: 'UINT16', onnxType: 'UINT16', bytes: () => bytesOf(new Uint16Array([65535, 1])), answer: [65535, 1] },
  { datatype: 'INT32', onnxType: 'INT32', bytes: () => bytesOf(new Int32Array([-2147483648, 5])), answer: [-2147483648, 5] },
  { datatype: 'UINT32', onnxType: 'UINT32', bytes: () => bytesOf(new Uint32Array([4294967295, 3])), answer: [4294967295, 3] },
  { datatype: 'INT64', onnxType: 'INT64', bytes: () => bytesOf(new BigInt64Array([-(2n ** 40n), 9n])), answer: [-(2 ** 40), 9] },
  { datatype: 'UINT64', onnxType: 'UINT64', bytes: () => bytesOf(new BigUint64Array([2n ** 40n, 0n])), answer: [2 ** 40, 0] },
  { datatype: 'BOOL', onnxType: 'BOOL', bytes: () => new Uint8Array([1, 0]), answer: [true, false] },
  { datatype: 'BYTES', onnxType: 'STRING', bytes: () => strings('héllo', ''), answer: ['héllo', ''] },
]

const bytesOf = (array: ArrayBufferView) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength)
/** BYTES elements as the extension lays them out: a 4-byte little-endian length before each. */
const strings = (...values: string[]) => {
  const parts = values.map((v) => new TextEncoder().encode(v))
  const out = new Uint8Array(parts.reduce((n, p) => n + 4 + p.length, 0))
  const view = new DataView(out.buffer)
  let at = 0
  for (const p of parts) {
    view.setUint32(at, p.length, true)
    out.set(p, at + 4)
    at += 4 + p.length
  }
  return out
}
const concat = (parts: readonly Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

/** `<name>_out = <name>` for one input per datatype: what goes in comes back. */
const addEchoModel = async (root: string) => {
  const inputName = (d: Datatype) => `in_${d.toLowerCase()}`
  const outputName = (d: Datatype) => `out_${d.toLowerCase()}`
  await writeModelConfig(root, {
    name: 'echo',
    platform: 'onnxruntime',
    max_batch_size: 8,
    inputs: SAMPLES.map((s) => ({ name: inputName(s.datatype), datatype: s.datatype, dims: [2] })),
    outputs: SAMPLES.map((s) => ({ name: outputName(s.datatype), datatype: s.datatype, dims: [2] })),
    dynamic_batching: { max_queue_delay_us: 500 },
    execution_providers: ['cpu'],
  })
  const info = (name: string, type: ElemType) => tensorInfo(name, type, ['batch', 2])
  const model = encodeModel({
    name: 'echo',
    input: SAMPLES.map((s) => info(inputName(s.datatype), s.onnxType)),
    output: SAMPLES.map((s) => info(outputName(s.datatype), s.onnxType)),
    node: SAMPLES.map((s) => ({ opType: 'Identity', name: `echo_${s.datatype}`, input: [inputName(s.datatype)], output: [outputName(s.datatype)] })),
  })
  await writeModelVersion(root, 'echo', 1, { 'model.onnx': model })
}

let repo: FixtureRepository
let backend: BackendProcess

beforeAll(async () => {
  repo = await createFixtureRepository()
  await addEchoModel(repo.root)
  backend = await startBackend({ MODEL_REPOSITORY: repo.root, MAX_BODY_BYTES: String(MAX_BODY_BYTES) })
})

afterAll(async () => {
  await backend?.stop()
  await repo?.remove()
})

interface Answer {
  status: number
  body: { error?: string; outputs?: Array<{ name: string; data: unknown[] }> }
}

/** POSTs a JSON header and binary data; `headerLength` overrides the header's true length. */
const postBinary = async (model: string, header: unknown, data: readonly Uint8Array[], { headerLength, type = 'application/octet-stream' }: { headerLength?: string; type?: string } = {}): Promise<Answer> => {
  const json = new TextEncoder().encode(JSON.stringify(header))
  const res = await fetch(`${backend.url}/v2/models/${model}/infer`, {
    method: 'POST',
    headers: { 'content-type': type, 'inference-header-content-length': headerLength ?? String(json.length) },
    body: concat([json, ...data]),
  })
  return { status: res.status, body: (await res.json()) as Answer['body'] }
}

/** A credit-risk request header whose one FP32 input of `rows` rows is binary. */
const creditRisk = (rows: number, size = rows * 23 * 4) => ({ inputs: [{ name: 'features', shape: [rows, 23], datatype: 'FP32', parameters: { binary_data_size: size } }] })
const featureRows = (rows: number) => Float32Array.from({ length: rows * 23 }, (_, i) => ((i * 7) % 11) / 10)

describe('binary tensor data extension', () => {
  it('takes every datatype as binary data and answers what a JSON request with the same values answers', async () => {
    const header = {
      inputs: SAMPLES.map((s) => ({ name: `in_${s.datatype.toLowerCase()}`, shape: [1, 2], datatype: s.datatype, parameters: { binary_data_size: s.bytes().length } })),
    }
    const res = await postBinary('echo', header, SAMPLES.map((s) => s.bytes()))
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    for (const s of SAMPLES) expect(res.body.outputs?.find((o) => o.name === `out_${s.datatype.toLowerCase()}`)?.data, s.datatype).toEqual(s.answer)
  })

  it('answers a binary FP32 request exactly as the same request in JSON, with either media type, beside a JSON input', async () => {
    const rows = featureRows(3)
    const asJson = await fetch(`${backend.url}/v2/models/credit-risk/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'features', shape: [3, 23], datatype: 'FP32', data: Array.from(rows) }] }),
    })
    const expected = ((await asJson.json()) as Answer['body']).outputs
    for (const type of ['application/octet-stream', 'application/json']) {
      const res = await postBinary('credit-risk', creditRisk(3), [bytesOf(rows)], { type })
      expect(res.status, type).toBe(200)
      expect(res.body.outputs).toEqual(expected)
    }
    // Inputs may mix: some carry JSON data, others binary.
    const mixed = { inputs: [{ name: 'in_fp32', shape: [1, 2], datatype: 'FP32', data: [1.5, -0.25] }, ...SAMPLES.slice(1).map((s) => ({ name: `in_${s.datatype.toLowerCase()}`, shape: [1, 2], datatype: s.datatype, parameters: { binary_data_size: s.bytes().length } }))] }
    const res = await postBinary('echo', mixed, SAMPLES.slice(1).map((s) => s.bytes()))
    expect(res.status).toBe(200)
    expect(res.body.outputs?.find((o) => o.name === 'out_fp32')?.data).toEqual([1.5, -0.25])
  })

  const one = (datatype: Datatype, bytes: Uint8Array, size = bytes.length) => {
    const header = {
      inputs: SAMPLES.map((s) => ({ name: `in_${s.datatype.toLowerCase()}`, shape: [1, 2], datatype: s.datatype, parameters: { binary_data_size: s.datatype === datatype ? size : s.bytes().length } })),
    }
    return postBinary('echo', header, SAMPLES.map((s) => (s.datatype === datatype ? bytes : s.bytes())))
  }

  it.each([
    ['a header length past the body', () => postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1))], { headerLength: '100000' }), /^Inference-Header-Content-Length 100000 exceeds the body's \d+ bytes$/],
    ['a header length that is not a byte count', () => postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1))], { headerLength: '-4' }), /^Inference-Header-Content-Length must be a byte count, got "-4"$/],
    ['a header length of 0', () => postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1))], { headerLength: '0' }), /^Inference-Header-Content-Length is 0/],
    ['a header length that cuts the JSON short', () => postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1))], { headerLength: '20' }), /^malformed JSON/],
    ['a size that does not match shape × datatype', () => postBinary('credit-risk', creditRisk(1, 88), [bytesOf(featureRows(1)).subarray(0, 88)]), /^input "features": binary_data_size 88 does not match shape \[1,23\] of FP32 \(23 × 4 = 92 bytes\)$/],
    ['a size past the bytes left', () => postBinary('credit-risk', creditRisk(2), [bytesOf(featureRows(1))]), /^input "features": binary_data_size 184 exceeds the 92 bytes of binary data left in the body$/],
    ['bytes left over after the last input', () => postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1)), new Uint8Array(3)]), /^3 bytes of binary data are claimed by no input's binary_data_size$/],
    ['a negative size', () => postBinary('credit-risk', creditRisk(1, -92), [bytesOf(featureRows(1))]), /^inputs\[0\]\.parameters\.binary_data_size must be a non-negative integer$/],
    ['a NaN in FP32 data', () => postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1).fill(Number.NaN, 5, 6))]), /^input "features": binary element 5 is not a finite FP32 value$/],
    ['an FP16 infinity', () => one('FP16', bytesOf(new Uint16Array([0x3c00, 0x7c00]))), /^input "in_fp16": binary element 1 is not a finite FP16 value$/],
    ['a BOOL byte other than 0 or 1', () => one('BOOL', new Uint8Array([1, 2])), /^input "in_bool": binary element 1 is not a byte of 0 \(false\) or 1 \(true\)$/],
    ['a BYTES element with a truncated length', () => one('BYTES', concat([strings('a'), new Uint8Array([1, 0])])), /^input "in_bytes": binary element 1 has a truncated 4-byte length$/],
    ['a BYTES element longer than the data', () => one('BYTES', concat([strings('a'), new Uint8Array([9, 0, 0, 0, 65])])), /^input "in_bytes": binary element 1 is 9 bytes, past the input's binary_data_size$/],
    ['too few BYTES elements', () => one('BYTES', strings('a')), /^input "in_bytes": binary data holds 1 BYTES elements, the shape needs 2$/],
    ['too many BYTES elements', () => one('BYTES', strings('a', 'b', 'c')), /^input "in_bytes": binary data holds more than the shape's 2 BYTES elements$/],
    ['BYTES that are not UTF-8', () => one('BYTES', concat([strings('a'), new Uint8Array([1, 0, 0, 0, 0xff])])), /^input "in_bytes": binary element 1 is not valid UTF-8$/],
  ])('refuses %s with a 400 and an error member', async (_, send, error) => {
    const res = await send()
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(error)
  })

  it('refuses a media type other than octet-stream or JSON (415) and a body over the limit (413)', async () => {
    const wrongType = await postBinary('credit-risk', creditRisk(1), [bytesOf(featureRows(1))], { type: 'text/plain' })
    expect(wrongType.status).toBe(415)
    expect(wrongType.body.error).toMatch(/^expected Content-Type application\/octet-stream or application\/json/)
    const rows = Math.ceil(MAX_BODY_BYTES / 92) + 1
    const tooLarge = await postBinary('credit-risk', creditRisk(rows), [bytesOf(featureRows(rows))])
    expect(tooLarge.status).toBe(413)
  })

  /** Splits a binary answer at its Inference-Header-Content-Length into the JSON header and the data after it. */
  const readBinaryAnswer = async (res: Response) => {
    const bytes = new Uint8Array(await res.arrayBuffer())
    const length = Number(res.headers.get('inference-header-content-length'))
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(0, length))) as { outputs: Array<{ name: string; data?: unknown[]; parameters?: { binary_data_size: number } }> }
    return { header, data: bytes.subarray(length) }
  }

  it('answers outputs asked for as binary data with their bytes after the JSON header, in output order', async () => {
    const header = {
      parameters: { binary_data_output: true },
      inputs: SAMPLES.map((s) => ({ name: `in_${s.datatype.toLowerCase()}`, shape: [1, 2], datatype: s.datatype, parameters: { binary_data_size: s.bytes().length } })),
      // binary_data_output makes every output binary unless an output says otherwise.
      outputs: SAMPLES.map((s) => (s.datatype === 'INT8' ? { name: 'out_int8', parameters: { binary_data: false } } : { name: `out_${s.datatype.toLowerCase()}` })),
    }
    const json = new TextEncoder().encode(JSON.stringify(header))
    const res = await fetch(`${backend.url}/v2/models/echo/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(json.length) },
      body: concat([json, ...SAMPLES.map((s) => s.bytes())]),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/octet-stream')
    const answer = await readBinaryAnswer(res)
    let at = 0
    for (const s of SAMPLES) {
      const output = answer.header.outputs.find((o) => o.name === `out_${s.datatype.toLowerCase()}`)!
      if (s.datatype === 'INT8') {
        expect(output.data).toEqual(s.answer)
        continue
      }
      expect(output.data, s.datatype).toBeUndefined()
      const size = output.parameters!.binary_data_size
      expect(answer.data.subarray(at, at + size), s.datatype).toEqual(s.bytes())
      at += size
    }
    expect(at).toBe(answer.data.length)
  })

  it('answers a plain JSON request that asks for one binary output, the rest as JSON', async () => {
    const rows = featureRows(2)
    const res = await fetch(`${backend.url}/v2/models/credit-risk/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'features', shape: [2, 23], datatype: 'FP32', data: Array.from(rows) }], outputs: [{ name: 'probabilities', parameters: { binary_data: true } }] }),
    })
    expect(res.status).toBe(200)
    const answer = await readBinaryAnswer(res)
    const probabilities = new Float32Array(answer.data.slice().buffer)
    expect(answer.header.outputs[0].parameters?.binary_data_size).toBe(2 * 2 * 4)
    expect(probabilities).toHaveLength(4)
    for (let r = 0; r < 2; r++) expect(probabilities[2 * r] + probabilities[2 * r + 1]).toBeCloseTo(1, 5)
  })

  it('names the extension in the server metadata, as Triton does', async () => {
    const metadata = (await (await fetch(`${backend.url}/v2`)).json()) as { extensions: string[] }
    expect(metadata.extensions).toContain('binary_tensor_data')
  })

  it('still serves a plain JSON request after all of these', async () => {
    const res = await fetch(`${backend.url}/v2/models/credit-risk/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'features', shape: [1, 23], datatype: 'FP32', data: Array.from(featureRows(1)) }] }),
    })
    expect(res.status).toBe(200)
  })
})
