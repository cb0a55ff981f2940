import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { AppEnv } from '../../../../edge/app.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { onError } from '../../../../edge/on-error.ts'

const app = new Hono<AppEnv>()
app.use('*', givenIsolate({}, { MAX_BODY_BYTES: '1024' }), requireJson())
app.post('/body', (c) => c.json({ length: c.get('bodyText')?.length }))
app.onError(onError)

describe('requireJson', () => {
  it('refuses a declared length past the limit with 413 from the header alone, reading none of the body', async () => {
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull: () => {
        pulled++
        return new Promise(() => {}) // the rest of a 50 MB upload that has not arrived yet
      },
    }, { highWaterMark: 0 })
    const res = await app.request('/body', {
      method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/json', 'content-length': '50000000' },
    } as RequestInit)
    expect(res.status).toBe(413)
    expect(await res.json()).toMatchObject({ status: 413, detail: 'request body is 50000000 bytes; the limit is 1024' })
    expect(pulled).toBe(0)
  })
})
