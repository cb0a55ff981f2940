import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../edge/stores/keys/memory.ts'
import { startBackend, type BackendProcess } from '../backend/support/backend-process.ts'

// Hostile but well-formed JSON bodies, sent to the edge in process (in front of a real backend)
// and to the backend directly: deep nesting is a 400 naming the limit, never a stack overflow,
// and a huge name the client sent is never echoed back whole.

const BODY_LIMIT = 4 * 1024 * 1024
const INFER = '/v2/models/credit-risk/infer'
const PREDICT = '/v1/models/credit-risk/predict'
/** Width of credit-risk's `features` input (FP32, [-1, 23]). */
const D = 23
/** What "a few KB" means for a refusal that names one client value. */
const SMALL_BODY = 4096

let backend: BackendProcess
let app: ReturnType<typeof createApp>
let key = ''
const lines: string[] = []
const env = () => ({ BACKEND_URL: backend.url, MAX_BODY_BYTES: String(BODY_LIMIT) })

/** `levels` nested arrays around `inner`, built as text (JSON.stringify would recurse). */
const deepArray = (levels: number, inner = '0') => `${'['.repeat(levels)}${inner}${']'.repeat(levels)}`
const features = (data: string, name = '"features"') => `{"name":${name},"shape":[1,${D}],"datatype":"FP32","data":${data}}`
const row = JSON.stringify(Array.from({ length: D }, () => 0.5))
const huge = 'a'.repeat(1024 * 1024)

const toEdge = (path: string, body: string) =>
  app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }, env())
const toBackend = (body: string) => fetch(`${backend.url}${INFER}`, { method: 'POST', body, headers: { 'content-type': 'application/json' } })

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models', MAX_BODY_BYTES: String(BODY_LIMIT) })
  key = generateApiKey('test')
  const store = new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 100_000 }])
  app = createApp({ parts: { keys: store }, log: (line) => lines.push(line) })
})

afterAll(async () => {
  await backend?.stop()
})

const nestedBodies: Array<[string, string, string]> = [
  ['inputs', INFER, `{"inputs":${deepArray(10_000)}}`],
  ['parameters', INFER, `{"inputs":[${features(row)}],"parameters":{"a":${deepArray(10_000)}}}`],
  ["a tensor's data", INFER, `{"inputs":[${features(deepArray(10_000))}]}`],
  ['an instance', PREDICT, `{"instances":[{"age":${deepArray(10_000)}}]}`],
]

describe('10,000 nested arrays', () => {
  for (const [where, path, body] of nestedBodies) {
    it(`in ${where} at the edge (${path}): 400 problem naming the depth limit`, async () => {
      const res = await toEdge(path, body)
      expect(res.status).toBe(400)
      expect(res.headers.get('content-type')).toBe('application/problem+json')
      const problem = (await res.json()) as Record<string, unknown>
      expect(problem).toMatchObject({ type: 'https://edge-infer.dev/problems/too-deeply-nested', title: 'Bad Request', status: 400, detail: expect.stringMatching(/nested more than 64 levels deep/) })
      if (path === INFER) expect(problem.error).toBe(problem.detail)
    })
  }

  for (const [where, , body] of nestedBodies.filter(([, path]) => path === INFER)) {
    it(`in ${where} sent to the backend directly: 400 {"error"}`, async () => {
      const res = await toBackend(body)
      expect(res.status).toBe(400)
      expect(Object.keys((await res.json()) as object)).toEqual(['error'])
    })
  }

  it('left no 5xx in the edge request log', () => {
    const statuses = lines.map((line) => (JSON.parse(line) as { status: number }).status)
    expect(statuses.length).toBeGreaterThan(0)
    expect(statuses.filter((s) => s >= 500)).toEqual([])
  })
})

describe('a huge name is quoted cut, not echoed', () => {
  it('a 100,000-character feature name on predict', async () => {
    const res = await toEdge(PREDICT, `{"instances":[{"${'f'.repeat(100_000)}":1}]}`)
    expect(res.status).toBe(400)
    const text = await res.text()
    expect(text.length).toBeLessThan(SMALL_BODY)
    expect(text).toContain('(cut, 100000 characters)')
  })

  const bodies: Array<[string, string]> = [
    ['a 1 MiB tensor name', `{"inputs":[${features(row, `"${huge}"`)}]}`],
    ['a 1 MiB output name', `{"inputs":[${features(row)}],"outputs":[{"name":"${huge}"}]}`],
    ['a 1 MiB unknown field', `{"inputs":[${features(row)}],"${huge}":1}`],
  ]
  for (const [what, body] of bodies) {
    it(`${what} on the edge's OIP route`, async () => {
      const res = await toEdge(INFER, body)
      expect(res.status).toBe(400)
      const text = await res.text()
      expect(text.length).toBeLessThan(SMALL_BODY)
      expect(text).toContain(`(cut, ${huge.length} characters)`)
    })

    it(`${what} sent to the backend directly`, async () => {
      const res = await toBackend(body)
      expect(res.status).toBe(400)
      const text = await res.text()
      expect(text.length).toBeLessThan(SMALL_BODY)
      expect((JSON.parse(text) as { error: string }).error).toContain(`(cut, ${huge.length} characters)`)
    })
  }

  const long = 'm'.repeat(8_000)
  const direct: Array<[string, string, RequestInit]> = [
    ['a long unknown model name in the path', `/v2/models/${long}/infer`, { method: 'POST', body: '{"inputs":[]}', headers: { 'content-type': 'application/json' } }],
    ['a long version in the path', `/v2/models/credit-risk/versions/${long}/infer`, { method: 'POST', body: '{"inputs":[]}', headers: { 'content-type': 'application/json' } }],
    ['a long unknown model in a metadata path', `/v2/models/${long}/versions/1`, { method: 'GET' }],
    ['a long Content-Type', INFER, { method: 'POST', body: '{}', headers: { 'content-type': long } }],
    ['a long Content-Encoding', INFER, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'content-encoding': long } }],
  ]
  for (const [what, path, init] of direct) {
    it(`${what}, sent to the backend directly`, async () => {
      const res = await fetch(`${backend.url}${path}`, init)
      expect(res.status).toBeGreaterThanOrEqual(400)
      expect(res.status).toBeLessThan(500)
      const text = await res.text()
      expect(text.length).toBeLessThan(SMALL_BODY)
      expect((JSON.parse(text) as { error: string }).error).toContain(`(cut, ${long.length} characters)`)
    })
  }

  it('a long X-Model-Version pin at the edge', async () => {
    const res = await app.request(INFER, { method: 'POST', body: `{"inputs":[${features(row)}]}`, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-model-version': long } }, env())
    expect(res.status).toBe(400)
    const text = await res.text()
    expect(text.length).toBeLessThan(SMALL_BODY)
    expect(text, text).toContain(`(cut, ${long.length} characters)`)
  })
})
