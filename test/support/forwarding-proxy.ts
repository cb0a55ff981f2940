import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A hop between the worker and the backend that forwards every request as it came, except those
 * `intercept` takes (it answers them, or holds them, and returns true).
 */
export const startForwardingProxy = async (target: string, intercept: (req: IncomingMessage, res: ServerResponse) => boolean): Promise<Server> => {
  const upstream = new URL(target)
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (intercept(req, res)) return
    const out = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers)
      answer.pipe(res)
    })
    out.on('error', () => res.destroy())
    req.pipe(out)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

/**
 * A stack's `between` hop that forwards everything to the backend but its infer calls, which it
 * refuses with 429 as a saturated backend does: an edge with a Lambda tier falls back on each one,
 * while the catalog and the drift reports still come from the backend.
 */
export const refusingInfer = async (backendUrl: string): Promise<{ url: string; close(): Promise<unknown> }> => {
  const server = await startForwardingProxy(backendUrl, (req, res) => {
    if (req.method !== 'POST' || !/\/infer$/.test(req.url ?? '')) return false
    req.resume()
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' }).end(JSON.stringify({ error: 'queue full' }))
    return true
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}
