import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { assertPortFree, confirmBackend, confirmEdge } from '../../dev/stack-checks.ts'
import { freePort } from '../support/ports.ts'

let servers: Server[] = []
afterEach(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  servers = []
})

/** A server that is not ours: answers every path with `status` and `body`. */
const foreign = async (status: number, body: unknown): Promise<string> => {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)))
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const quick = { tries: 3, everyMs: 10 }

describe('assertPortFree', () => {
  it('passes a free port and refuses a taken one, naming the variable', async () => {
    const port = await freePort()
    await expect(assertPortFree(port, 'BACKEND_PORT')).resolves.toBeUndefined()
    const url = await foreign(200, {})
    const taken = Number(new URL(url).port)
    await expect(assertPortFree(taken, 'BACKEND_PORT')).rejects.toThrow(new RegExp(`\\(pid ${process.pid}\\) holds port ${taken}; stop it with \`kill -- -\\d+\`, or set BACKEND_PORT to another port$`))
  })
})

describe('confirmBackend', () => {
  it('accepts the backend that answers ready with our instance id', async () => {
    const url = await foreign(200, { ready: true, instance_id: 'ours' })
    await expect(confirmBackend(url, 'ours', quick)).resolves.toBeUndefined()
  })

  it('refuses at once a ready server without our instance id, or with another', async () => {
    await expect(confirmBackend(await foreign(200, { ready: true }), 'ours', quick)).rejects.toThrow(/answers as ready, but it is not the backend this command started/)
    await expect(confirmBackend(await foreign(503, { ready: false, instance_id: 'theirs' }), 'ours', quick)).rejects.toThrow(/it is another backend \(instance "theirs"\)/)
  })

  it('gives up after its tries when nothing answers', async () => {
    await expect(confirmBackend(`http://127.0.0.1:${await freePort()}`, 'ours', quick)).rejects.toThrow(/did not come up after 3 tries/)
  })
})

describe('confirmEdge', () => {
  it('refuses a healthy server that does not take the key it was given', async () => {
    const url = await foreign(401, { title: 'Unauthorized' })
    // /healthz must pass first, so a server that answers 401 everywhere never reaches the key check: it is "not up".
    await expect(confirmEdge(url, 'k', quick)).rejects.toThrow(/did not come up/)
    const healthyButForeign = createServer((req, res) => res.writeHead(req.url === '/healthz' ? 200 : 401).end('{}'))
    servers.push(healthyButForeign)
    await new Promise<void>((resolve) => healthyButForeign.listen(0, '127.0.0.1', resolve))
    const foreignUrl = `http://127.0.0.1:${(healthyButForeign.address() as AddressInfo).port}`
    await expect(confirmEdge(foreignUrl, 'k', quick)).rejects.toThrow(/refuses this command's API key \(401\): it is not the edge this command started/)
  })

  it('accepts an edge that answers the catalog to the key', async () => {
    const edge = createServer((req, res) => res.writeHead(req.url === '/healthz' || req.headers['x-api-key'] === 'k' ? 200 : 401).end('{}'))
    servers.push(edge)
    await new Promise<void>((resolve) => edge.listen(0, '127.0.0.1', resolve))
    await expect(confirmEdge(`http://127.0.0.1:${(edge.address() as AddressInfo).port}`, 'k', quick)).resolves.toBeUndefined()
  })
})
