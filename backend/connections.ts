import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

export interface LingerBounds {
  /** Longest a refused upload is still read (and dropped) after its answer, in ms. */
  ms: number
  /** Most bytes read (and dropped) after the answer before the socket is closed anyway. */
  bytes: number
}

/** How often a lingering socket is checked against its byte bound and for a body that has ended. */
const LINGER_CHECK_MS = 50

/**
 * The server's open connections, and the two ways it closes them without losing an answer.
 *
 * Draining (at shutdown, as a proxy does): from the first moment every answer says
 * `Connection: close`, including those already being worked on, while the listener stays open;
 * once every connection has closed, or the window runs out, the listener closes and only then
 * are idle connections dropped. Closing idle keep-alive connections at once loses the requests
 * a pooled client has already put on them.
 *
 * Lingering close (what nginx calls it): when an answer that closes the connection goes out
 * before the client has sent its whole body (a 413 on Content-Length, a refusal before the body
 * is read), the server half-closes and keeps reading and dropping what still arrives, within
 * bounds. Closing at once makes the kernel reset the connection under a client still writing,
 * and one that writes the whole body before reading (Node's fetch) never sees the answer.
 */
export class Connections {
  private readonly sockets = new Set<Socket>()
  /**
   * The answer each connection is on (the latest, when a client pipelines; Node sends answers in
   * order), so a drain can still make it close its connection and a close can tell whether its
   * request's body is still arriving. One map entry per request: a set of pending answers cost
   * a 'close' listener per request.
   */
  private readonly answers = new WeakMap<Socket, ServerResponse>()
  private readonly lingering = new WeakSet<Socket>()
  private drainStarted = false
  private emptied: (() => void) | undefined

  constructor(private readonly server: Server, private readonly linger: LingerBounds) {
    server.on('connection', (socket: Socket) => this.track(socket))
  }

  /** True from the moment the drain starts: readiness is off from then on. */
  get draining(): boolean {
    return this.drainStarted
  }

  /** The app's listener, with every answer during a drain closing its connection. */
  listener(app: (req: IncomingMessage, res: ServerResponse) => unknown): RequestListener {
    return (req, res) => {
      this.answers.set(req.socket, res)
      if (this.drainStarted) res.setHeader('connection', 'close')
      void app(req, res)
    }
  }

  /**
   * Starts the drain; resolves once no connection is open, or after `windowMs`. The listener stays
   * open meanwhile: a client that reconnects after its `Connection: close` is still answered.
   */
  drain(windowMs: number): Promise<void> {
    this.drainStarted = true
    for (const socket of this.sockets) {
      const res = this.answers.get(socket)
      if (res !== undefined && !res.headersSent) res.setHeader('connection', 'close')
    }
    if (this.sockets.size === 0) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.emptied = undefined
        resolve()
      }
      const timer = setTimeout(done, windowMs)
      this.emptied = done
    })
  }

  /** How many connections are open now. */
  get open(): number {
    return this.sockets.size
  }

  /**
   * Stops listening and drops the idle connections; resolves when the last connection has closed
   * (those mid-request close after their answer, lingering ones within their bounds).
   */
  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  private track(socket: Socket): void {
    this.sockets.add(socket)
    socket.once('close', () => {
      this.sockets.delete(socket)
      if (this.sockets.size === 0) this.emptied?.()
    })
    // Node closes a connection after an answer that says `Connection: close` through destroySoon
    // (so does @hono/node-server once it gives up draining a body): the one place to linger.
    const destroySoon = socket.destroySoon.bind(socket)
    socket.destroySoon = () => {
      const req = this.answers.get(socket)?.req
      if (req === undefined || req.complete) destroySoon()
      else this.lingerClose(socket, req)
    }
  }

  private lingerClose(socket: Socket, req: IncomingMessage): void {
    if (this.lingering.has(socket)) return
    this.lingering.add(socket)
    // The answer is queued before the FIN; the client reads both and stops sending.
    socket.end()
    const from = socket.bytesRead
    const stop = () => socket.destroy()
    const timer = setTimeout(stop, this.linger.ms)
    // The parser still reads and drops the body; the socket's count says how much arrived.
    const check = setInterval(() => {
      if (req.complete || socket.bytesRead - from > this.linger.bytes) stop()
    }, LINGER_CHECK_MS)
    socket.once('close', () => {
      clearTimeout(timer)
      clearInterval(check)
    })
  }
}
