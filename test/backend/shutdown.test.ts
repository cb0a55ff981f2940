import { Agent, request, type ClientRequest } from 'node:http'
import { describe, expect, it } from 'vitest'
import { ModelManager } from '../../backend/loader/model-manager.ts'
import { createLogger } from '../../backend/logger.ts'
import { Repository } from '../../backend/repository/repository.ts'
import { creditRequest } from './support/applicants.ts'
import { post, startBackend, until, type BackendProcess } from './support/backend-process.ts'
import { DEMO_REPOSITORY, createFixtureRepository } from './support/fixture-repository.ts'

const depth = async (url: string) => {
  const text = await (await fetch(`${url}/metrics`)).text()
  const match = /^edge_infer_backend_queue_depth_all_rows (\d+)$/m.exec(text)
  // A renamed or missing gauge must fail here, not read as an empty queue.
  if (!match) throw new Error('edge_infer_backend_queue_depth_all_rows is not in /metrics')
  return Number(match[1])
}

describe('graceful shutdown', () => {
  it('is ready only once the pinned models are warm, and not from the moment shutdown begins, which refuses new work with 503', async () => {
    const manager = new ModelManager(new Repository(DEMO_REPOSITORY), { batching: true, memoryBudgetBytes: 1 << 30, logger: createLogger('silent') })
    expect(manager.ready()).toBe(false)
    const starting = manager.start()
    expect(manager.ready()).toBe(false)
    await starting
    expect(manager.ready()).toBe(true)
    const stopping = manager.shutdown()
    expect(manager.ready()).toBe(false)
    await expect(manager.resolve('credit-risk')).rejects.toMatchObject({ status: 503, message: 'server is shutting down' })
    await stopping
  })

  it('on SIGTERM answers every accepted request, exits 0 and stops listening', async () => {
    const repo = await createFixtureRepository({ withDemo: false })
    await repo.addModel('parked', {
      maxBatchSize: 1024,
      config: (c) => (c.dynamic_batching = { dispatch: 'delay', max_queue_delay_us: 30_000_000, max_queue_size: 4096 }),
    })
    const backend = await startBackend({ MODEL_REPOSITORY: repo.root, SHUTDOWN_GRACE_MS: '20000' })
    try {
      const body = { inputs: [{ name: 'features', shape: [2, 4], datatype: 'FP32', data: [1, 2, 3, 4, 5, 6, 7, 8] }] }
      const accepted = Array.from({ length: 100 }, () => post(`${backend.url}/v2/models/parked/infer`, body))
      await until(async () => (await depth(backend.url)) === 200)

      backend.child.kill('SIGTERM')
      const results = await Promise.all(accepted)
      expect(results.map((r) => r.status)).toEqual(Array(100).fill(200))
      expect(await backend.exited).toBe(0)
      const messages = backend.logs.map((l) => l.msg)
      expect(messages.indexOf('shutting down')).toBeGreaterThan(-1)
      expect(messages.indexOf('stopped')).toBeGreaterThan(messages.indexOf('shutting down'))
      await expect(fetch(`${backend.url}/v2/health/live`)).rejects.toThrow()
    } finally {
      await backend.stop()
      await repo.remove()
    }
  })
})

interface Outcome {
  status?: number
  /** The answer said `Connection: close`: the client drops that socket. */
  close?: boolean
  /** A socket error instead of an answer (ECONNRESET, EPIPE, ECONNREFUSED...). */
  error?: string
  body?: string
}

/** What a request got; a socket error is an outcome, not a throw. */
const outcomeOf = (req: ClientRequest): Promise<Outcome> =>
  new Promise((resolve) => {
    req.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode, close: res.headers.connection === 'close', body: text }))
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }))
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }))
  })

/** One request over node:http with the given agent. */
const send = (agent: Agent, url: string, path: string, body?: string): Promise<Outcome> => {
  const req = request(`${url}${path}`, { agent, method: body === undefined ? 'GET' : 'POST', headers: body === undefined ? {} : { 'content-type': 'application/json' } })
  const answered = outcomeOf(req)
  req.end(body)
  return answered
}

const logged = (backend: BackendProcess, msg: string) => until(() => backend.logs.some((l) => l.msg === msg))

describe('draining on SIGTERM', () => {
  it('under keep-alive load at 32 connections answers every request, tells each connection to close, and turns readiness off at once', async () => {
    // A long drain window: the test must not pass by the window running out before the load stops.
    const backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, SHUTDOWN_DRAIN_MS: '15000', SHUTDOWN_GRACE_MS: '25000' })
    const load = new Agent({ keepAlive: true, maxSockets: 32 })
    // A keep-alive connection that is idle when the signal comes, as a pooled proxy's often are.
    const probe = new Agent({ keepAlive: true, maxSockets: 1 })
    try {
      expect((await send(probe, backend.url, '/v2/health/ready')).status).toBe(200)
      const body = JSON.stringify(creditRequest(2))
      const outcomes: Outcome[][] = Array.from({ length: 32 }, () => [])
      let sent = 0
      // Each client stops once told to close (a pool drops such a connection) or after a bounded count.
      const clients = outcomes.map(async (mine) => {
        for (let i = 0; i < 2_000; i++) {
          sent++
          const outcome = await send(load, backend.url, '/v2/models/credit-risk/infer', body)
          mine.push(outcome)
          if (outcome.error !== undefined || outcome.close) return
        }
      })
      await until(() => sent >= 32 * 4)
      backend.child.kill('SIGTERM')
      await logged(backend, 'shutting down')
      const ready = await send(probe, backend.url, '/v2/health/ready')
      await Promise.all(clients)

      expect(ready).toMatchObject({ status: 503, close: true })
      expect(JSON.parse(ready.body ?? '{}')).toMatchObject({ ready: false })
      const all = outcomes.flat()
      expect(all.filter((o) => o.error !== undefined)).toEqual([])
      expect(all.filter((o) => o.status !== 200)).toEqual([])
      // Every client heard the drain on its own connection, none by losing it.
      expect(outcomes.map((mine) => mine.at(-1)?.close)).toEqual(Array(32).fill(true))
      expect(await backend.exited).toBe(0)
      expect(backend.logs.map((l) => l.msg)).toContain('stopped')
    } finally {
      load.destroy()
      probe.destroy()
      await backend.stop()
    }
  })

  it('answers a request that was mid-upload when the signal came, as if no signal had come', async () => {
    const backend = await startBackend({ MODEL_REPOSITORY: DEMO_REPOSITORY, SHUTDOWN_DRAIN_MS: '15000', SHUTDOWN_GRACE_MS: '25000' })
    try {
      const body = Buffer.from(JSON.stringify(creditRequest(3)))
      const req = request(`${backend.url}/v2/models/credit-risk/infer`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) } })
      const answer = outcomeOf(req)
      req.write(body.subarray(0, 100))
      void logged(backend, 'shutting down').then(() => req.end(body.subarray(100)))
      // The head and the first bytes are on the server's socket before the signal.
      await new Promise((r) => setTimeout(r, 200))
      backend.child.kill('SIGTERM')
      const outcome = await answer
      expect(outcome).toMatchObject({ status: 200, close: true })
      expect(JSON.parse(outcome.body ?? '{}')).toMatchObject({ model_name: 'credit-risk', outputs: [{ name: 'probabilities', shape: [3, 2] }] })
      expect(await backend.exited).toBe(0)
    } finally {
      await backend.stop()
    }
  })
})
