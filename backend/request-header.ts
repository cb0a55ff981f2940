import type { Context } from 'hono'
import type { BackendEnv } from './env.ts'

/**
 * A request header by its lower-case name. Behind @hono/node-server it is read from Node's own
 * parsed headers, so no fetch `Headers` object is built for the request (the adapter builds one
 * on first use, validating every header); elsewhere (`app.request()`) from the Request. As with
 * `Headers`, repeated values come back joined by ", " (Node keeps the first of a repeated
 * Content-Type or Content-Length).
 */
export const requestHeader = (c: Context<BackendEnv>, name: string): string | undefined => {
  const incoming = c.env?.incoming
  if (!incoming) return c.req.header(name)
  const value = incoming.headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}
