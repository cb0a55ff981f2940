import { connect, type Socket } from 'node:net'

/**
 * A minimal RESP2 client over one TCP connection: commands are encoded as arrays of bulk strings
 * and pipelined; replies are matched to calls through a FIFO. No reconnect: once the connection
 * fails or closes, every pending and later call rejects with a {@link RedisConnectionError}
 * (callers make a new client).
 */

/** An error reply from Redis (`-ERR ...`). A value, not a failure of the call: text kept verbatim. */
export class RedisReplyError extends Error {
  override name = 'RedisReplyError'
}

/** The connection failed, closed, or stopped answering; the call's outcome is unknown. */
export class RedisConnectionError extends Error {
  override name = 'RedisConnectionError'
}

/** A decoded reply. Bulk strings stay bytes (they may be binary); simple strings are text. */
export type RespValue = string | Buffer | number | null | RedisReplyError | RespValue[]

export type RespArg = string | Buffer

const CRLF = Buffer.from('\r\n')

/** `*N\r\n` then `$len\r\n<bytes>\r\n` per argument. */
export const encodeCommand = (args: readonly RespArg[]): Buffer => {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)]
  for (const arg of args) {
    const bytes = typeof arg === 'string' ? Buffer.from(arg, 'utf8') : arg
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, CRLF)
  }
  return Buffer.concat(parts)
}

/** Thrown by the parser for bytes that are not RESP2; the connection cannot be trusted after it. */
export class RespProtocolError extends Error {
  override name = 'RespProtocolError'
}

/**
 * Incremental RESP2 reply parser. `push` bytes as they arrive; `next` returns one whole reply or
 * `undefined` when more bytes are needed. Chunks are only joined once enough bytes for the reply
 * being waited on have arrived, so a large bulk string is not re-copied on every chunk.
 */
export class RespParser {
  private chunks: Buffer[] = []
  private buffered = 0
  private buf: Buffer = Buffer.alloc(0)
  private pos = 0
  /** Total bytes (from `pos`) needed before another parse attempt can succeed. */
  private need = 1

  push(chunk: Buffer): void {
    this.chunks.push(chunk)
    this.buffered += chunk.length
  }

  next(): RespValue | undefined {
    if (this.buf.length - this.pos + this.buffered < this.need) return undefined
    if (this.chunks.length > 0) {
      this.buf = Buffer.concat([this.buf.subarray(this.pos), ...this.chunks])
      this.pos = 0
      this.chunks = []
      this.buffered = 0
    }
    const parsed = this.parse(this.pos)
    if (parsed === undefined) return undefined
    this.pos = parsed.end
    this.need = 1
    if (this.pos === this.buf.length) {
      this.buf = Buffer.alloc(0)
      this.pos = 0
    }
    return parsed.value
  }

  private line(at: number): { text: string; end: number } | undefined {
    const cr = this.buf.indexOf(CRLF, at)
    if (cr === -1) {
      this.need = this.buf.length - this.pos + 1
      return undefined
    }
    return { text: this.buf.toString('utf8', at, cr), end: cr + 2 }
  }

  private int(text: string): number {
    if (!/^-?\d+$/.test(text)) throw new RespProtocolError(`bad RESP integer ${JSON.stringify(text.slice(0, 40))}`)
    return Number(text)
  }

  private parse(at: number): { value: RespValue; end: number } | undefined {
    if (at >= this.buf.length) {
      this.need = at - this.pos + 1
      return undefined
    }
    const type = String.fromCharCode(this.buf[at]!)
    const header = this.line(at + 1)
    if (header === undefined) return undefined
    switch (type) {
      case '+':
        return { value: header.text, end: header.end }
      case '-':
        return { value: new RedisReplyError(header.text), end: header.end }
      case ':':
        return { value: this.int(header.text), end: header.end }
      case '$': {
        const length = this.int(header.text)
        if (length < 0) return { value: null, end: header.end }
        const end = header.end + length + 2
        if (end > this.buf.length) {
          this.need = end - this.pos
          return undefined
        }
        return { value: Buffer.from(this.buf.subarray(header.end, header.end + length)), end }
      }
      case '*': {
        const count = this.int(header.text)
        if (count < 0) return { value: null, end: header.end }
        const items: RespValue[] = []
        let end = header.end
        for (let i = 0; i < count; i++) {
          const item = this.parse(end)
          if (item === undefined) return undefined
          items.push(item.value)
          end = item.end
        }
        return { value: items, end }
      }
      default:
        throw new RespProtocolError(`unexpected RESP type byte 0x${this.buf[at]!.toString(16)}`)
    }
  }
}

export interface RespClientOptions {
  host?: string
  port?: number
  /** No reply progress for this long while calls are pending → the connection is destroyed. */
  commandTimeoutMs?: number
  /** Connecting for longer than this fails the connection. */
  connectTimeoutMs?: number
}

interface Pending {
  resolve: (value: RespValue) => void
  reject: (error: Error) => void
}

export interface RespClient {
  /** Sends one command; resolves with its reply (an error reply is a {@link RedisReplyError} value). */
  call(args: readonly RespArg[]): Promise<RespValue>
  /** Writes several commands in one write, so nothing interleaves; resolves with all replies. */
  batch(commands: ReadonlyArray<readonly RespArg[]>): Promise<RespValue[]>
  /** Calls written and not yet answered. */
  readonly pending: number
  /** True once the connection failed or was closed; every call then rejects. */
  readonly closed: boolean
  close(): Promise<void>
}

/** Opens a connection (lazily usable: commands written before it connects are buffered). */
export const createRespClient = ({
  host = '127.0.0.1',
  port = 6379,
  commandTimeoutMs = 10_000,
  connectTimeoutMs = 5_000,
}: RespClientOptions = {}): RespClient => {
  const queue: Pending[] = []
  const parser = new RespParser()
  let failure: RedisConnectionError | undefined
  const socket: Socket = connect({ host, port })
  socket.setNoDelay(true)

  let watchdog: NodeJS.Timeout | undefined
  /** (Re)starts the no-progress timer while calls are pending; stops it when none are. */
  const watch = (): void => {
    clearTimeout(watchdog)
    watchdog = queue.length === 0 ? undefined : setTimeout(
      () => fail(new RedisConnectionError(`redis at ${host}:${port} did not answer within ${commandTimeoutMs} ms`)),
      commandTimeoutMs,
    ).unref()
  }

  const fail = (error: RedisConnectionError): void => {
    failure ??= error
    clearTimeout(watchdog)
    clearTimeout(connectTimer)
    for (const call of queue.splice(0)) call.reject(failure)
    socket.destroy()
  }

  const connectTimer = setTimeout(
    () => fail(new RedisConnectionError(`redis connect to ${host}:${port} timed out after ${connectTimeoutMs} ms`)),
    connectTimeoutMs,
  ).unref()
  socket.once('connect', () => clearTimeout(connectTimer))

  socket.on('data', (chunk: Buffer) => {
    parser.push(chunk)
    try {
      for (let reply = parser.next(); reply !== undefined; reply = parser.next()) {
        const call = queue.shift()
        if (call === undefined) throw new RespProtocolError('reply without a pending command')
        call.resolve(reply)
      }
    } catch (error) {
      fail(new RedisConnectionError(`redis protocol error: ${(error as Error).message}`))
      return
    }
    watch()
  })
  socket.on('error', (error) => fail(new RedisConnectionError(`redis connection to ${host}:${port} failed: ${error.message}`)))
  socket.on('close', () => fail(new RedisConnectionError(`redis connection to ${host}:${port} closed`)))

  const batch = (commands: ReadonlyArray<readonly RespArg[]>): Promise<RespValue[]> => {
    if (failure) return Promise.reject(failure)
    // `*0` gets no reply from Redis and would shift every later reply onto the wrong call.
    if (commands.length === 0 || commands.some((c) => c.length === 0)) {
      return Promise.reject(new TypeError('empty command'))
    }
    const idle = queue.length === 0
    const replies = commands.map(
      () => new Promise<RespValue>((resolve, reject) => queue.push({ resolve, reject })),
    )
    // Every reply promise rejects together on failure; observe all but the one awaited below.
    const all = Promise.all(replies)
    for (const reply of replies) reply.catch(() => {})
    if (idle) watch()
    socket.write(Buffer.concat(commands.map(encodeCommand)))
    return all
  }

  return {
    call: async (args) => (await batch([args]))[0]!,
    batch,
    get pending() {
      return queue.length
    },
    get closed() {
      return failure !== undefined
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (socket.destroyed) return resolve()
        socket.once('close', () => resolve())
        fail(new RedisConnectionError('redis client closed'))
      }),
  }
}
