import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { AppEnv } from '../../../../edge/app.ts'
import { discardUnreadBody } from '../../../../edge/pipeline/body/discard.ts'
import { requireJson } from '../../../../edge/pipeline/body/index.ts'
import { Problem } from '../../../../edge/problem.ts'
import { onError } from '../../../../edge/on-error.ts'
import { givenIsolate } from '../../support/isolate.ts'
import { halfABody } from './half-a-body.ts'

const KIB = new Uint8Array(1024).fill(0x20)

/** A body of `chunks` KiB, pulled only when read; `stallAfter` chunks in, it stops sending without ending. */
const upload = (chunks: number, stallAfter = Infinity) => {
  let pulled = 0
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === stallAfter) return new Promise(() => {})
      if (pulled === chunks) return controller.close()
      pulled++
      controller.enqueue(KIB)
    },
    cancel() {
      cancelled = true
    },
  }, { highWaterMark: 0 })
  return { body, pulled: () => pulled, cancelled: () => cancelled }
}

const appWith = (bounds: { maxBytes: number; maxMs: number }) => {
  const app = new Hono<AppEnv>()
  app.use('*', discardUnreadBody(bounds), givenIsolate({}, { MAX_BODY_BYTES: '4096' }))
  // Refused before the body is looked at, as auth refuses.
  app.post('/refused', () => {
    throw new Problem(401, 'Unauthorized', 'no key')
  })
  app.post('/body', requireJson(), (c) => c.json({ length: c.get('bodyText').length }))
  app.onError(onError)
  return app
}

const post = (app: Hono<AppEnv>, path: string, body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  app.request(path, { method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/json', ...headers } } as RequestInit)

describe('discardUnreadBody', () => {
  const bounds = { maxBytes: 64 * 1024, maxMs: 5_000 }

  it('reads a body the answer left unread to its end before answering, so the client finishes its upload', async () => {
    const { body, pulled, cancelled } = upload(40)
    const res = await post(appWith(bounds), '/refused', body)
    expect(res.status).toBe(401)
    expect(pulled()).toBe(40)
    expect(cancelled()).toBe(false)
  })

  it('drops the rest of a chunked body requireJson stopped reading at the limit', async () => {
    const { body, pulled, cancelled } = upload(40)
    const res = await post(appWith(bounds), '/body', body)
    expect(res.status).toBe(413)
    expect(pulled()).toBe(40)
    expect(cancelled()).toBe(false)
  })

  it('leaves alone a body that was read', async () => {
    const { body, pulled } = upload(2)
    const res = await post(appWith(bounds), '/body', body)
    expect(await res.json()).toEqual({ length: 2048 })
    expect(pulled()).toBe(2)
  })

  it('cancels the rest once maxBytes have been dropped', async () => {
    const { body, pulled, cancelled } = upload(1_000)
    expect((await post(appWith(bounds), '/refused', body)).status).toBe(401)
    expect(cancelled()).toBe(true)
    // 64 KiB and the chunk that passed it.
    expect(pulled()).toBe(65)
  })

  it('cancels a declared length past maxBytes without reading any of it, so a client waiting to send gets its answer at once', async () => {
    const { body, pulled, cancelled } = upload(1_000, 0)
    const res = await post(appWith(bounds), '/body', body, { 'content-length': String(bounds.maxBytes + 1) })
    expect(res.status).toBe(413)
    expect(pulled()).toBe(0)
    expect(cancelled()).toBe(true)
  })

  it('stops waiting for a body that stalls after maxMs and answers', async () => {
    const { body, pulled, cancelled } = upload(1_000, 3)
    const started = Date.now()
    const res = await post(appWith({ ...bounds, maxMs: 200 }), '/refused', body)
    expect(res.status).toBe(401)
    expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    expect(pulled()).toBe(3)
    expect(cancelled()).toBe(true)
  })

  it('answers when the client goes away during the drop', async () => {
    const res = await post(appWith(bounds), '/refused', halfABody('{"half":'))
    expect(res.status).toBe(401)
  })
})
