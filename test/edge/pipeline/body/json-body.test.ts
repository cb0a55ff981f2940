import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH, MAX_JSON_VALUES, jsonBody } from '../../../../edge/pipeline/body/json-body.ts'
import type { AppEnv } from '../../../../edge/app.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { onError } from '../../../../edge/on-error.ts'

const app = new Hono<AppEnv>()
app.use('*', givenIsolate({}, { MAX_BODY_BYTES: String(4 * 1024 * 1024) }), requireJson())
app.post('/v1/echo', (c) => c.json({ parsed: typeof jsonBody(c.get('bodyText')) }))
app.post('/v2/echo', (c) => c.json({ parsed: typeof jsonBody(c.get('bodyText')) }))
app.onError(onError)

const post = (path: string, body: string) => app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`

describe('jsonBody bounds', () => {
  it(`accepts ${MAX_JSON_DEPTH} levels and refuses one more with a 400 naming the limit`, async () => {
    expect((await post('/v1/echo', nested(MAX_JSON_DEPTH))).status).toBe(200)
    const res = await post('/v1/echo', nested(MAX_JSON_DEPTH + 1))
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await res.json()).toEqual({
      type: 'https://edge-infer.dev/problems/too-deeply-nested',
      title: 'Bad Request',
      status: 400,
      detail: `the request body is nested more than ${MAX_JSON_DEPTH} levels deep`,
      instance: '/v1/echo',
    })
  })

  it('counts objects as levels too', async () => {
    const deepObject = `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}0${'}'.repeat(MAX_JSON_DEPTH + 1)}`
    expect((await post('/v1/echo', deepObject)).status).toBe(400)
  })

  it(`refuses more than ${MAX_JSON_VALUES} values, and on an OIP route says so in "error" as well`, async () => {
    expect((await post('/v2/echo', `[${Array(MAX_JSON_VALUES - 1).fill(0).join(',')}]`)).status).toBe(200)
    const res = await post('/v2/echo', `[${Array(MAX_JSON_VALUES).fill(0).join(',')}]`)
    expect(res.status).toBe(400)
    const detail = `the request body holds more than ${MAX_JSON_VALUES} JSON values`
    expect(await res.json()).toMatchObject({ type: 'https://edge-infer.dev/problems/too-many-values', status: 400, detail, error: detail })
  })
})
