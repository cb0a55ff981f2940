import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { creditRequest } from '../support/applicants.ts'
import { post, startBackend, until, type BackendProcess } from '../support/backend-process.ts'

let backend: BackendProcess

beforeAll(async () => {
  backend = await startBackend({ MODEL_REPOSITORY: 'models' })
})

afterAll(async () => {
  await backend?.stop()
})

/** 9 MiB of filler sent chunked (a stream body has no Content-Length), over fetch's keep-alive pool. */
const uploadChunked = async (bytes: number) => {
  const chunk = new Uint8Array(64 * 1024).fill(0x20)
  let sent = 0
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close()
      sent += chunk.byteLength
      controller.enqueue(chunk)
    },
  })
  const res = await fetch(`${backend.url}/v2/models/credit-risk/infer`, { method: 'POST', body, duplex: 'half', headers: { 'content-type': 'application/json' } } as RequestInit)
  return { status: res.status, connection: res.headers.get('connection'), body: await res.text() }
}

describe('a chunked upload over MAX_BODY_BYTES', () => {
  it('is answered 413 naming the limit and the connection closed, every time: no reset for the client that sends the next one', async () => {
    for (let i = 0; i < 3; i++) {
      expect(await uploadChunked(9 * 1024 * 1024)).toEqual({ status: 413, connection: 'close', body: JSON.stringify({ error: 'request body exceeds 8388608 bytes' }) })
    }
    expect((await post(`${backend.url}/v2/models/credit-risk/infer`, creditRequest(1))).status).toBe(200)
  })
})

describe('a client that hangs up mid-body', () => {
  it.each([
    ['with a Content-Length', 'Content-Length: 1000\r\n\r\n{"inputs":['],
    ['chunked', 'Transfer-Encoding: chunked\r\n\r\n5\r\n{"inp\r\n'],
  ])('%s is logged as a client-closed request (499, info), not as a server error', async (_case, rest) => {
    const before = backend.logs.length
    const url = new URL(backend.url)
    const socket = connect(Number(url.port), url.hostname)
    await new Promise((resolve) => socket.once('connect', resolve))
    socket.write(`POST /v2/models/credit-risk/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${rest}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    socket.destroy()
    await until(() => backend.logs.slice(before).some((l) => l.msg === 'client closed the request'))
    const lines = backend.logs.slice(before)
    expect(lines.find((l) => l.msg === 'client closed the request')).toMatchObject({ level: 'info', status: 499 })
    expect(lines.filter((l) => l.level === 'error')).toEqual([])
  })
})
