// The part of autocannon 9's programmatic API the load runner uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  type Context = Record<string, unknown>

  interface AutocannonRequest {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
    /** Called before each request on a connection; the answer is what is sent. */
    setupRequest?: (request: AutocannonRequest, context: Context) => AutocannonRequest
    onResponse?: (status: number, body: string, context: Context, headers: Record<string, string | string[]>) => void
  }

  interface AutocannonOptions {
    url: string
    connections?: number
    /** Seconds. */
    duration?: number
    /** Requests per second over all connections. */
    overallRate?: number
    /** Seconds before a request counts as timed out. */
    timeout?: number
    method?: string
    headers?: Record<string, string>
    requests?: AutocannonRequest[]
  }

  interface AutocannonResult {
    errors: number
    timeouts: number
    requests: { total: number }
  }

  interface AutocannonInstance extends EventEmitter, PromiseLike<AutocannonResult> {
    stop(): void
  }

  function autocannon(options: AutocannonOptions): AutocannonInstance
  export default autocannon
}
