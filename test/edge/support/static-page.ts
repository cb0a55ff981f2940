import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface StaticPage {
  /** `http://127.0.0.1:<port>`: the page's origin, as the browser sends it. */
  origin: string
  /** The page itself. */
  url: string
  close(): Promise<void>
}

/**
 * Serves one HTML page at `/` from its own `node:http` server on a free loopback port, so every
 * page gets its own origin. `render` runs per request, so the page may name things (the edge's
 * URL) that only exist after the server started.
 */
export const servePage = async (render: () => string): Promise<StaticPage> => {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/' || req.url === '/index.html')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      res.end(render())
      return
    }
    if (req.url === '/favicon.ico') {
      res.writeHead(204).end()
      return
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`
  return {
    origin,
    url: `${origin}/`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()))
        server.closeAllConnections()
      }),
  }
}

/** Escapes text for an HTML text node or a double-quoted attribute. */
export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!)
