import type { IncomingMessage, Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** The body was larger than the server takes; it was read to the end but not kept. */
export class PayloadTooLarge extends Error {}

/** Reads a request body, keeping at most `limit` bytes. Shared by the local dev servers. */
export const readBody = (req: IncomingMessage, limit: number): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) chunks.push(chunk)
    })
    req.on('end', () => (size > limit ? reject(new PayloadTooLarge()) : resolve(Buffer.concat(chunks))))
    req.on('error', reject)
  })

/** Listens on `port` (0: any free one) and resolves with the server's base URL. */
export const listen = async (server: Server, port: number, host: string): Promise<string> => {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
}
