import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { bearerChecker } from './auth.ts'
import {
  BadRequest, parseCommand, parseCommands, parseJson, parsePathCommand, refusal, toAnswer, toTransactionAnswer,
  type UpstashAnswer,
} from './protocol.ts'
import { handshake, parseRedisUrl, type RedisTarget } from './redis-url.ts'
import { createRespClient, RedisConnectionError, type RespArg, type RespClient, type RespValue } from './resp.ts'
import { ScriptTranslator } from './scripts.ts'
import { PayloadTooLarge, listen, readBody } from '../http-server.ts'

export interface UpstashAdapterOptions {
  /** `redis://[user:password@]host[:port][/db]`; wins over `redisHost`/`redisPort`. */
  redisUrl?: string
  redisHost?: string
  redisPort?: number
  /** The bearer token clients must send. */
  token: string
  /** Where the adapter listens (0 = a free port). */
  port?: number
  host?: string
  /** No reply progress from Redis for this long fails the pending requests (503). */
  commandTimeoutMs?: number
  /** Larger request bodies are refused with 413. */
  maxBodyBytes?: number
}

export interface UpstashAdapter {
  /** `http://host:port`, the Upstash REST URL to give clients. */
  url: string
  token: string
  /**
   * Commands sent to Redis and not yet answered; whether a Redis connection is open; requests
   * received (each a client's round trip) and the commands they carried, by name, since the start.
   */
  stats(): { pending: number; connected: boolean; requests: number; commands: Readonly<Record<string, number>> }
  close(): Promise<void>
}

type Json = UpstashAnswer | UpstashAnswer[]

const send = (res: ServerResponse, status: number, body: Json): void => {
  if (res.headersSent || res.destroyed) return
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(json) })
  res.end(json)
}

/**
 * Starts an Upstash-REST-compatible HTTP server in front of a real redis-server, for local
 * development and tests: `POST /` (one JSON command), `POST /pipeline`, `POST /multi-exec`, and
 * the path form (`GET /get/k`, `POST /set/k/v`). Redis error text passes through verbatim (400);
 * an unreachable or silent Redis answers 503 `{ error }`. One pipelined Redis connection is shared
 * by all requests and reopened on the next request after it fails.
 */
export const startUpstashAdapter = async ({
  redisUrl,
  redisHost = '127.0.0.1',
  redisPort = 6379,
  token,
  port = 0,
  host = '127.0.0.1',
  commandTimeoutMs = 10_000,
  maxBodyBytes = 64 * 1024 * 1024,
}: UpstashAdapterOptions): Promise<UpstashAdapter> => {
  const authorized = bearerChecker(token)
  const target: RedisTarget = redisUrl !== undefined ? parseRedisUrl(redisUrl) : { host: redisHost, port: redisPort }
  const greeting = handshake(target)

  let client: RespClient | undefined
  const redis = (): RespClient => {
    if (client === undefined || client.closed) {
      client = createRespClient({ host: target.host, port: target.port, commandTimeoutMs })
      // Written first on the new connection, so it precedes every request's command; a failed
      // AUTH shows up as the NOAUTH error of the commands that follow.
      if (greeting.length > 0) client.batch(greeting).catch(() => {})
    }
    return client
  }

  const scripts = new ScriptTranslator()
  let requests = 0
  const commandCounts: Record<string, number> = {}
  const counted = (received: RespArg[][]): RespArg[][] => {
    for (const [name] of received) {
      const key = String(name).toUpperCase()
      commandCounts[key] = (commandCounts[key] ?? 0) + 1
    }
    return received
  }

  /** Sends commands (refused ones answer without reaching Redis); answers in order. */
  const run = async (received: RespArg[][], base64: boolean): Promise<UpstashAnswer[]> => {
    const commands = received.map((command) => scripts.translate(command))
    const answers: Array<UpstashAnswer | undefined> = commands.map((command) => {
      const why = refusal(command)
      return why === undefined ? undefined : { error: why }
    })
    const allowed = commands.filter((_, i) => answers[i] === undefined)
    const replies: RespValue[] = allowed.length > 0 ? await redis().batch(allowed) : []
    let next = 0
    return answers.map((answer) => answer ?? toAnswer(replies[next++]!, base64))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!authorized(req.headers.authorization)) return send(res, 401, { error: 'Unauthorized' })
    requests++
    const path = (req.url ?? '/').split('?')[0]!
    const method = req.method ?? 'GET'
    const base64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64'
    const commandPath = path !== '/' && path !== '/pipeline' && path !== '/multi-exec'
    if (method !== 'POST' && !(method === 'GET' && commandPath)) {
      return send(res, 405, { error: `ERR method ${method} not allowed on ${path}` })
    }
    const body = await readBody(req, maxBodyBytes)

    if (path === '/pipeline') return send(res, 200, await run(counted(parseCommands(parseJson(body))), base64))

    if (path === '/multi-exec') {
      const commands = counted(parseCommands(parseJson(body)))
      const refused = commands.map(refusal).find((why) => why !== undefined)
      if (refused !== undefined) return send(res, 400, { error: refused })
      // One write: nothing from another request can land between MULTI and EXEC.
      const answer = toTransactionAnswer(await redis().batch([['MULTI'], ...commands.map((c) => scripts.translate(c)), ['EXEC']]), base64)
      return send(res, Array.isArray(answer) ? 200 : 400, answer)
    }

    const command = path === '/' ? parseCommand(parseJson(body)) : parsePathCommand(path, body)
    const [answer] = await run(counted([command]), base64)
    return send(res, 'error' in answer! ? 400 : 200, answer!)
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof BadRequest) return send(res, 400, { error: error.message })
      if (error instanceof PayloadTooLarge) return send(res, 413, { error: `ERR request body larger than ${maxBodyBytes} bytes` })
      if (error instanceof RedisConnectionError) return send(res, 503, { error: `ERR ${error.message}` })
      send(res, 500, { error: `ERR adapter failure: ${error instanceof Error ? error.message : String(error)}` })
    }).catch(() => res.destroy())
  })

  const url = await listen(server, port, host)

  return {
    url,
    token,
    stats: () => ({ pending: client?.pending ?? 0, connected: client !== undefined && !client.closed, requests, commands: { ...commandCounts } }),
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await Promise.all([closed, client?.close()])
    },
  }
}
