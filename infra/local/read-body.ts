import type { IncomingMessage } from 'node:http'

/** The body was larger than the server takes; it was read to the end but not kept. */
export class PayloadTooLarge extends Error {}

/** Reads a request body, keeping at most `limit` bytes (the local dev servers' one body reader). */
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
