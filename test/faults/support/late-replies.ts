import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import { listen, readBody } from '../../../infra/local/http-server.ts'

/**
 * An HTTP proxy in front of an Upstash REST endpoint that forwards every command at once (Redis
 * applies it) but holds the reply for `holdMs(body)` ms: the write that "timed out but landed".
 */
export interface LateReplies {
  url: string
  /** How long the reply to the request with this body is held (read per request; 0 passes it through). */
  holdMs: (body: string) => number
  /** Bodies of the requests seen, in order. */
  seen: string[]
  close(): Promise<void>
}

export const startLateReplies = async (upstream: string, holdMs: (body: string) => number = () => 0): Promise<LateReplies> => {
  const target = new URL(upstream)
  const seen: string[] = []
  const proxy: LateReplies = {
    url: '',
    holdMs,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req, 64 * 1024 * 1024)
    const text = body.toString('utf8')
    seen.push(text)
    const hold = proxy.holdMs(text)
    const upstreamReq = request({
      host: target.hostname, port: target.port, path: req.url, method: req.method,
      headers: { ...req.headers, host: target.host },
    }, (upstreamRes) => {
      const chunks: Buffer[] = []
      upstreamRes.on('data', (c: Buffer) => chunks.push(c))
      upstreamRes.on('end', () => {
        setTimeout(() => {
          if (res.destroyed) return
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers)
          res.end(Buffer.concat(chunks))
        }, hold)
      })
    })
    upstreamReq.on('error', () => res.destroy())
    upstreamReq.end(body)
  })
  server.keepAliveTimeout = 1
  proxy.url = await listen(server, 0, '127.0.0.1')
  return proxy
}
