import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../../edge/app.ts'
import { generateApiKey, hashApiKey } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { HttpTransport, parseInferResponse } from '../../../edge/backend-client/http.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { MemoryGroundTruth } from '../../../edge/stores/ground-truth/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { creditRequest } from '../../backend/support/applicants.ts'
import { demoMetadata, startStubBackend, type StubBackend } from '../../faults/support/stub-backend.ts'

const MODEL = 'credit-risk'
/** 2^62 + 1 and -(2^63): a JavaScript number holds neither. */
const BIG = '4611686018427387905'
const MOST_NEGATIVE = '-9223372036854775808'

let backend: StubBackend
let key: string

beforeAll(async () => {
  key = generateApiKey('test')
  backend = await startStubBackend((_method, path) => {
    if (path === `/v2/models/${MODEL}`) return { status: 200, body: demoMetadata(MODEL, [1]) }
    if (path.endsWith('/infer')) {
      // The body is written as text so that its digits are the backend's own (JSON.stringify would round them).
      return { status: 200, text: `{"model_name":"${MODEL}","model_version":"1","id":"x","outputs":[{"name":"ids","shape":[3],"datatype":"INT64","data":[${BIG},${MOST_NEGATIVE},7]},{"name":"p","shape":[1],"datatype":"FP32","data":[0.25]}]}` }
    }
    return { status: 404, body: { error: 'not here' } }
  })
})

afterAll(async () => {
  await backend?.close()
})

describe('the tensor route passes 64-bit integers on to the digit', () => {
  it('writes the backend\'s INT64 outputs beyond 2^53 exactly, and every other number as it was', async () => {
    const transport = new HttpTransport({ baseUrl: backend.url })
    const app = createApp({
      parts: {
        keys: new MemoryKeyStore([{ name: 'web', hash: await hashApiKey(key), scopes: ['predict'], rate_limit_per_minute: 1_000 }]),
        transport,
        catalog: new ModelCatalog({ transport }),
        rollouts: new MemoryRolloutStore(),
        groundTruth: new MemoryGroundTruth(),
      },
    })
    const res = await app.request(`/v2/models/${MODEL}/infer`, { method: 'POST', body: JSON.stringify(creditRequest(1)), headers: { 'content-type': 'application/json', 'x-api-key': key } })
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).toContain(`"data":[${BIG},${MOST_NEGATIVE},7]`)
    expect(text).toContain('"data":[0.25]')
  })
})

describe('parseInferResponse', () => {
  const exact = (text: string) => JSON.stringify(parseInferResponse(text))

  it('keeps every integer beyond 2^53 to the digit, wherever JSON lets it stand', () => {
    for (const [data, digits] of [[`[${BIG}]`, BIG], [`[ ${BIG} ]`, BIG], [`[1,\n${MOST_NEGATIVE}]`, MOST_NEGATIVE], [`[-0.5,${BIG},0.25]`, BIG]]) {
      expect(exact(`{"outputs":[{"data":${data}}]}`)).toContain(digits)
    }
    expect(exact(`{"a":${BIG}}`)).toBe(`{"a":${BIG}}`)
  })

  it('parses fractions and exponents with many digits as JSON.parse does', () => {
    const text = '{"outputs":[{"data":[0.12345678901234567,-0.9876543210987654,1.2345678901234567e-20,12345678901234567e2,123456789012345.5]}]}'
    expect(parseInferResponse(text)).toEqual(JSON.parse(text))
  })
})
