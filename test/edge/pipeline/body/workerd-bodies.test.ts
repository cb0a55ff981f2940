import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateApiKey, hashApiKey } from '../../../../edge/stores/keys/api-key.ts'
import { startWorker, type RunningWorker } from '../../support/workerd.ts'

// Bodies that are not what they claim, sent byte for byte to the bundled worker in real workerd
// (what production runs; `wrangler dev` puts its own proxy in front, see docs/architecture.md, local-dev notes).
// Everything here is refused by auth or requireJson, before the model is looked up, so no backend is needed.

const PREDICT = '/v1/models/credit-risk/predict'
/** Bounds for "promptly": far above what any of these takes, far below the 10 s the client waited. */
const PROMPT_MS = 5_000
const KEY = generateApiKey('test')

let worker: RunningWorker

beforeAll(async () => {
  const entry = { name: 'web', hash: await hashApiKey(KEY), scopes: ['predict'], rate_limit_per_minute: 600 }
  worker = await startWorker({ BACKEND_URL: 'http://127.0.0.1:9', MAX_BODY_BYTES: '262144', API_KEYS: JSON.stringify([entry]) })
})

afterAll(async () => {
  await worker?.dispose()
})

interface RawResponse {
  status: number
  head: string
  body: string
}

const open = (): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(worker.url)
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket))
    socket.once('error', reject)
  })

/** The first response on `socket`, once its head and Content-Length bytes of body have arrived. */
const responseOn = (socket: Socket): Promise<RawResponse> =>
  new Promise((resolve, reject) => {
    let received = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      const end = received.indexOf('\r\n\r\n')
      if (end < 0) return
      const head = received.subarray(0, end).toString('latin1')
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0)
      if (received.length < end + 4 + length) return
      socket.off('data', onData)
      resolve({ status: Number(head.split(' ')[1]), head, body: received.subarray(end + 4, end + 4 + length).toString('utf8') })
    }
    socket.on('data', onData)
    socket.once('error', reject)
    socket.once('close', () => reject(new Error(`connection closed before a response; got ${JSON.stringify(received.toString('latin1'))}`)))
  })

/** A predict request's head, with the key: what follows is for the body checks to judge. */
const requestHead = (headers: Record<string, string>) =>
  `POST ${PREDICT} HTTP/1.1\r\nhost: edge.test\r\ncontent-type: application/json\r\nx-api-key: ${KEY}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`

/** A well-formed request on a fresh connection: the worker still answers normally (401: no key). */
const nextRequestIsFine = async () => {
  const res = await fetch(`${worker.url}${PREDICT}`, { method: 'POST', body: '{"instances":[{}]}', headers: { 'content-type': 'application/json' } })
  expect(res.status).toBe(401)
  await res.body?.cancel()
}

const waitFor = async <T>(find: () => T | undefined, what: string): Promise<T> => {
  for (const started = Date.now(); Date.now() - started < PROMPT_MS; await new Promise((r) => setTimeout(r, 20))) {
    const found = find()
    if (found !== undefined) return found
  }
  throw new Error(`no ${what} within ${PROMPT_MS} ms; logs: ${worker.logs.join('\n')}`)
}

const requestLines = () => worker.logs.flatMap((line) => {
  try {
    const entry = JSON.parse(line) as Record<string, unknown>
    return entry.msg === 'request' ? [entry] : []
  } catch {
    return []
  }
})

describe('in workerd', () => {
  it('answers a declared Content-Length past the limit with 413 at once, without waiting for the body', async () => {
    const socket = await open()
    try {
      const started = Date.now()
      socket.write(requestHead({ 'content-length': '50000000' }))
      const res = await responseOn(socket)
      expect(Date.now() - started).toBeLessThan(PROMPT_MS)
      expect(res.status).toBe(413)
      expect(JSON.parse(res.body)).toMatchObject({ status: 413, detail: 'request body is 50000000 bytes; the limit is 262144' })
    } finally {
      socket.destroy()
    }
    await nextRequestIsFine()
  })

  it('answers a chunked body past the limit with 413 and keeps the connection usable for the next request', async () => {
    const socket = await open()
    try {
      const chunk = 'x'.repeat(64 * 1024)
      socket.write(requestHead({ 'transfer-encoding': 'chunked' }))
      for (let i = 0; i < 5; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`)
      socket.write('0\r\n\r\n')
      const refused = await responseOn(socket)
      expect(refused.status).toBe(413)
      const body = '{"instances":[{}]}'
      socket.write(`POST ${PREDICT} HTTP/1.1\r\nhost: edge.test\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`)
      expect((await responseOn(socket)).status).toBe(401)
    } finally {
      socket.destroy()
    }
  })

  // Node's fetch (undici) writes the whole body before it reads: an answer sent on a connection
  // closed under its upload reaches it as EPIPE ("fetch failed"), not as the answer.
  it('lets a client that writes its whole body first read the 413 for a body past the limit', async () => {
    const res = await fetch(`${worker.url}${PREDICT}`, {
      method: 'POST', body: `{"instances":[${' '.repeat(4 * 1024 * 1024)}]}`, headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    })
    expect(res.status).toBe(413)
    expect(await res.json()).toMatchObject({ status: 413, title: 'Payload Too Large' })
    await nextRequestIsFine()
  })

  it('lets a client without a key that writes its whole body first read the 401', async () => {
    const res = await fetch(`${worker.url}${PREDICT}`, { method: 'POST', body: ' '.repeat(4 * 1024 * 1024), headers: { 'content-type': 'text/plain' } })
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ status: 401, title: 'Unauthorized' })
  })

  for (const [what, send] of [
    ['stops half-way through its declared Content-Length and closes', (socket: Socket) => socket.end(`${requestHead({ 'content-length': '1000' })}{"instances":[{"age":`)],
    ['stops half-way through a chunked body and closes', (socket: Socket) => socket.end(`${requestHead({ 'transfer-encoding': 'chunked' })}14\r\n{"instances":[{"age":\r\n`)],
  ] as const) {
    it(`logs a client that ${what} as client-closed (499), not as a server error`, async () => {
      const socket = await open()
      const before = requestLines().length
      socket.on('error', () => {})
      send(socket)
      const line = await waitFor(() => requestLines().slice(before).find((entry) => entry.path === PREDICT), 'request log line')
      socket.destroy()
      expect(line).toMatchObject({ level: 'warn', status: 499 })
      expect(worker.logs.filter((l) => l.includes('"level":"error"'))).toEqual([])
      await nextRequestIsFine()
    })
  }
})
