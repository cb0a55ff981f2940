import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBackend, until, type BackendProcess } from './support/backend-process.ts'
import { DEMO_REPOSITORY } from './support/fixture-repository.ts'

// An early refusal (413 on the declared length) goes out while the client is still sending. The
// server must keep reading, within bounds, so the client reads the answer instead of a reset.

const INFER = '/v2/models/credit-risk/infer'
const MAX_BODY_BYTES = 8 * 1024 * 1024

const head = (url: string, length: number) => {
  const { host } = new URL(url)
  return `POST ${INFER} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`
}

const open = (url: string, options: { allowHalfOpen?: boolean } = {}): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect({ host: hostname, port: Number(port), ...options }, () => resolve(socket))
    socket.once('error', reject)
  })

describe('lingering close after an early refusal', () => {
  let backend: BackendProcess
  beforeAll(async () => {
    backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, MAX_BODY_BYTES: String(MAX_BODY_BYTES) })
  })
  afterAll(async () => {
    await backend.stop()
  })

  // Node's fetch writes the whole body before it reads; each size three times, as the reset was a race.
  for (const mib of [9, 64]) {
    it(`Node's fetch sending ${mib} MiB with Content-Length reads the 413 answer`, async () => {
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${backend.url}${INFER}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new Uint8Array(mib * 1024 * 1024).fill(0x20) })
        expect(res.status).toBe(413)
        expect(res.headers.get('connection')).toBe('close')
        expect(await res.json()).toEqual({ error: `request body exceeds ${MAX_BODY_BYTES} bytes` })
      }
    })
  }
})

describe('lingering close is bounded', () => {
  it('closes once more than LINGER_MAX_BYTES arrived after the answer, with the client still sending', async () => {
    // A long time bound: only the byte bound can end this linger.
    const backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, LINGER_MAX_BYTES: String(1024 * 1024), LINGER_MS: '600000', SHUTDOWN_GRACE_MS: '700000' })
    try {
      const socket = await open(backend.url)
      let answer = ''
      socket.setEncoding('utf8')
      socket.on('data', (chunk: string) => (answer += chunk))
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
      socket.on('error', () => {})
      // Declares 8 GiB and writes until the server closes; a server that never closed would take it all.
      const declared = 8 * 1024 ** 3
      socket.write(head(backend.url, declared))
      const chunk = Buffer.alloc(1024 * 1024, 0x20)
      let written = 0
      while (!socket.destroyed && written < declared / 2) {
        written += chunk.length
        if (!socket.write(chunk)) await new Promise<void>((resolve) => { socket.once('drain', resolve); socket.once('close', resolve) })
      }
      await closed
      expect(answer).toMatch(/^HTTP\/1\.1 413 /)
      expect(written).toBeLessThan(declared / 2)
    } finally {
      await backend.stop()
    }
  })

  it('closes after LINGER_MS when the client neither sends nor closes', async () => {
    const backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, LINGER_MS: '300' })
    try {
      // Half-open: the client does not answer the server's FIN, so only the time bound ends the linger.
      const socket = await open(backend.url, { allowHalfOpen: true })
      let answer = ''
      socket.setEncoding('utf8')
      socket.on('data', (chunk: string) => (answer += chunk))
      let failed = false
      socket.on('error', () => (failed = true))
      socket.write(head(backend.url, 64 * 1024 * 1024) + ' '.repeat(1024))
      await until(() => answer.startsWith('HTTP/1.1 413 '))
      // Once the server has let go, a byte sent is refused (reset) rather than read and dropped.
      await until(() => {
        if (!socket.destroyed) socket.write(' ')
        return failed
      }, { tries: 200, everyMs: 100 })
      expect(failed).toBe(true)
    } finally {
      await backend.stop()
    }
  })
})
