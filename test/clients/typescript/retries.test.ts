import { createServer, type Server, type ServerResponse } from 'node:http'
import { afterEach, describe, expect, it } from 'vitest'
import { DeadlineExceededError, NetworkError, ProblemError, createClient } from '../../../clients/typescript/src/index.ts'
import { listen } from '../../../dev/http-server.ts'

/**
 * The retry policy on the paths a healthy worker never takes (a 502 or 504 without Retry-After, a
 * refused connection, a connection reset mid-call), against real sockets: a local server that
 * answers each request by a script, and a port nothing listens on. `random: () => 0` makes
 * every jittered wait zero, so the counts do not depend on time.
 */

const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

type Answer = number | 'reset'

/** Answers the nth request with `script[n]` (the last one after that): a status with a problem body, or a reset connection. */
const scripted = async (script: Answer[]) => {
  const seen: string[] = []
  const server = createServer((req, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url} ${req.headers['x-request-id']}`)
    const answer = script[Math.min(seen.length - 1, script.length - 1)]!
    req.resume()
    if (answer === 'reset') return void req.socket.destroy()
    if (answer === 200) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"models":[]}')
    res.writeHead(answer, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'https://edge-infer.dev/problems/x', title: 'T', status: answer, detail: 'scripted' }))
  })
  servers.push(server)
  return { url: await listen(server, 0, '127.0.0.1'), seen }
}

const clientOf = (baseUrl: string) => createClient({ baseUrl, random: () => 0 })
const applicant = { instances: [{ age: 34 }] }

describe('retries without Retry-After', () => {
  it('resends a read on 502 and 504 with the same request id, and a reset connection, until it is answered', async () => {
    const { url, seen } = await scripted([502, 504, 'reset', 200])
    await expect(clientOf(url).models.list({ requestId: 'same-id-1' })).resolves.toEqual({ models: [] })
    expect(seen).toEqual(Array(4).fill('GET /v1/models same-id-1'))
  })

  it('gives up after its attempts with the last refusal', async () => {
    const { url, seen } = await scripted([502])
    await expect(clientOf(url).models.list()).rejects.toMatchObject({ name: 'ProblemError', status: 502 })
    expect(seen).toHaveLength(4)
  })

  it('never resends a prediction after a 502, a 504, a 500 or a reset: it may have run', async () => {
    for (const answer of [502, 504, 500, 'reset'] as const) {
      const { url, seen } = await scripted([answer, 200])
      const error = await clientOf(url).predict('m', applicant).catch((err: unknown) => err)
      expect(error).toBeInstanceOf(answer === 'reset' ? NetworkError : ProblemError)
      expect(seen, String(answer)).toHaveLength(1)
    }
  })

  it('resends a prediction after a 503 without Retry-After', async () => {
    const { url, seen } = await scripted([503, 200])
    await clientOf(url).predict('m', applicant)
    expect(seen).toHaveLength(2)
  })

  it('resends a prediction whose connection was refused: it never reached the edge', async () => {
    // A port that was just free: nothing listens on it.
    const { url } = await scripted([200])
    const closed = servers.pop()!
    closed.closeAllConnections()
    await new Promise((resolve) => closed.close(resolve))
    const sends: string[] = []
    const client = createClient({ baseUrl: url, random: () => 0, fetch: (request) => (sends.push(request.url), fetch(request)) })
    const error = await client.predict('m', applicant).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(NetworkError)
    expect(sends).toHaveLength(4)
  })

  it('does not start a backoff step that would end past the deadline', async () => {
    const { url, seen } = await scripted([502])
    const client = createClient({ baseUrl: url, random: () => 1, retry: { baseDelayMs: 60_000 } })
    const error = await client.models.list({ timeoutMs: 30_000 }).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(DeadlineExceededError)
    expect((error as DeadlineExceededError).cause).toMatchObject({ status: 502 })
    expect(seen).toHaveLength(1)
  })
})
