import { serve } from '@hono/node-server'
import { Hono, type Context } from 'hono'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { HEADERS } from '../../../shared/headers.ts'

/**
 * The HTTP ceiling H: what @hono/node-server and JSON cost on this machine with no model at all.
 * It takes the same POST body as the real server, reads and JSON-parses it as the real server's
 * `requireJson` does, and answers with a response of the same shape and size — the real server's
 * own answer to the same request, captured by the benchmark and passed in CEILING_RESPONSE — so
 * the only thing missing compared with the real server is validation, batching and inference.
 *
 * Run as a child process: `node --import tsx load/bench/backend/http-ceiling.ts` (PORT, HOST, CEILING_RESPONSE).
 */

type Json = Record<string, unknown>

const readTemplate = (): Json => {
  const text = process.env.CEILING_RESPONSE
  if (!text) throw new Error('CEILING_RESPONSE must hold an infer response (JSON) to answer with')
  const value: unknown = JSON.parse(text)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('CEILING_RESPONSE must be a JSON object')
  return value as Json
}

export const createCeilingApp = (template: Json) => {
  const app = new Hono()
  const version = { [HEADERS.modelVersion]: String(template.model_version ?? '') }
  const infer = async (c: Context) => {
    const body = JSON.parse(await c.req.text()) as Json
    // Echo the request id as the real server does; a fresh object so c.json serializes per request.
    return c.json({ ...template, id: typeof body.id === 'string' ? body.id : template.id }, 200, version)
  }
  app.post('/v2/models/:model/infer', infer)
  app.post('/v2/models/:model/versions/:version/infer', infer)
  app.get('/v2/health/ready', (c) => c.json({ ready: true }))
  return app
}

const main = () => {
  const app = createCeilingApp(readTemplate())
  const server = serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: process.env.HOST ?? '127.0.0.1' })
  server.once('listening', () => {
    const { address, port } = server.address() as AddressInfo
    // Same log line as backend/server.ts, so the benchmark starts both the same way.
    process.stdout.write(`${JSON.stringify({ level: 'info', msg: 'listening', url: `http://${address}:${port}` })}\n`)
  })
  const stop = () => server.close(() => process.exit(0))
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}

// Only as an entry point: importing createCeilingApp (e.g. from a test) must not start a server.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
