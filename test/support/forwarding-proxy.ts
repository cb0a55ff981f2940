import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

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
