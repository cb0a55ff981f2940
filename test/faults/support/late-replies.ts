import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import { listen, readBody } from '../../../dev/http-server.ts'

/**
 * An HTTP proxy in front of an Upstash REST endpoint that forwards every command at once (Redis
 * applies it) but holds the reply for `holdMs(body)` ms: the write that "timed out but landed".
 * With `forwardAfterMs` a request is held before it is forwarded: the write that lands only after
 * the client gave up on it (and, maybe, after its resend).
 */
export interface LateReplies {
  url: string
  /** How long the reply to the request with this body is held (read per request; 0 passes it through). */
  holdMs: (body: string) => number
  /** How long the request with this body waits before it is forwarded (default: not at all). */
  forwardAfterMs: (body: string) => number
  /** Requests held by `forwardAfterMs` and not yet answered by the upstream. */
  readonly heldRequests: number
  /** Bodies of the requests seen, in order. */
  seen: string[]
  close(): Promise<void>
}

export const startLateReplies = async (upstream: string, holdMs: (body: string) => number = () => 0): Promise<LateReplies> => {
  const target = new URL(upstream)
  const seen: string[] = []
  let held = 0
  const proxy: LateReplies = {
    url: '',
    holdMs,
    forwardAfterMs: () => 0,
    get heldRequests() {
      return held
    },
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req, 64 * 1024 * 1024)
    const text = body.toString('utf8')
    seen.push(text)
    const hold = proxy.holdMs(text)
    const wait = proxy.forwardAfterMs(text)
    if (wait > 0) {
      held++
      await new Promise((resolve) => setTimeout(resolve, wait))
    }
    const upstreamReq = request({
      host: target.hostname, port: target.port, path: req.url, method: req.method,
      headers: { ...req.headers, host: target.host },
    }, (upstreamRes) => {
      const chunks: Buffer[] = []
      upstreamRes.on('data', (c: Buffer) => chunks.push(c))
      upstreamRes.on('end', () => {
        if (wait > 0) held--
        setTimeout(() => {
          if (res.destroyed) return
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers)
          res.end(Buffer.concat(chunks))
        }, hold)
      })
    })
    upstreamReq.on('error', () => {
      if (wait > 0) held--
      res.destroy()
    })
    upstreamReq.end(body)
  })
  server.keepAliveTimeout = 1
  proxy.url = await listen(server, 0, '127.0.0.1')
  return proxy
}
