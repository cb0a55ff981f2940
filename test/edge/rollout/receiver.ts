import { createServer, type ServerResponse } from 'node:http'
import { listen, readBody } from '../../../dev/http-server.ts'

/** A webhook receiver on a real loopback `node:http` server. */
export interface Receiver {
  url: string
  /** Every POST body received, parsed, failed answers included. */
  readonly bodies: unknown[]
  /** What it answers (200 by default). */
  status: number
  /** Answers nothing until `release()`: a receiver that hangs. */
  hold(): void
  release(): void
  close(): Promise<void>
}

export const startReceiver = async (): Promise<Receiver> => {
  const bodies: unknown[] = []
  let held: ServerResponse[] | undefined
  const server = createServer(async (req, res) => {
    bodies.push(JSON.parse((await readBody(req, 1 << 20)).toString('utf8')))
    if (held) held.push(res)
    else res.writeHead(receiver.status).end()
  })
  const url = await listen(server, 0, '127.0.0.1')
  const receiver: Receiver = {
    url,
    bodies,
    status: 200,
    hold: () => void (held = []),
    release: () => {
      for (const res of held ?? []) res.writeHead(receiver.status).end()
      held = undefined
    },
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
  return receiver
}
