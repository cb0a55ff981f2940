/** The body is longer than the limit; nothing past the limit was kept. */
export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`)
  }
}

/**
 * The body stream failed before its end. The body comes from the client alone, so this is the
 * client going away mid-upload (workerd: "Network connection lost."), not a fault of the edge.
 */
export class BodyAborted extends Error {
  constructor(cause: unknown) {
    super('the client closed the connection before its request body arrived in full', { cause })
  }
}

const decoder = new TextDecoder()

/**
 * How much of an oversized chunked body is still read (and dropped) before the stream is
 * cancelled, as a multiple of the limit (16 MiB at the default 256 KiB). Leaving the rest unread,
 * cancelled or not, broke the next request under `wrangler dev`: its proxy answered "worker
 * restarted mid-request" (503) to whoever came next. Reading on to the end keeps it usable; the
 * cap keeps an endless upload from holding the request open (past it, the next local request may
 * still see that 503; Cloudflare's edge has no such proxy and caps bodies itself).
 */
const DRAIN_FACTOR = 64

/**
 * Reads a request body as UTF-8 text (a leading BOM dropped, invalid bytes replaced, as
 * `Request.text()` does), never more than `maxBytes`:
 * - with a declared Content-Length (checked against the limit before this is called) the
 *   runtime reads it in one go: in workerd that is native code, several times cheaper than a
 *   reader loop in JavaScript; the length is checked again, in case it was declared falsely;
 * - without one (chunked uploads) bytes are counted as they arrive, and a body past the limit is
 *   refused: nothing beyond the limit is kept, the rest is read and dropped up to `DRAIN_FACTOR`
 *   times the limit, then the stream is cancelled. In Node this loop is also cheaper than
 *   `Request.text()`'s own promise chain.
 * A stream that fails on the way is `BodyAborted`.
 */
export const readBodyText = async (request: Request, maxBytes: number): Promise<string> => {
  if (request.body === null) return ''
  try {
    return await readWithin(request, request.body, maxBytes)
  } catch (err) {
    throw err instanceof BodyTooLarge ? err : new BodyAborted(err)
  }
}

const readWithin = async (request: Request, stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> => {
  if (request.headers.has('content-length')) {
    const body = await request.arrayBuffer()
    if (body.byteLength > maxBytes) throw new BodyTooLarge(maxBytes)
    return decoder.decode(body)
  }
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let bytes = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    bytes += value.byteLength
    if (bytes > maxBytes) {
      await drain(reader, bytes, maxBytes * DRAIN_FACTOR)
      throw new BodyTooLarge(maxBytes)
    }
    chunks.push(value)
  }
  return decoder.decode(chunks.length === 1 ? chunks[0] : concat(chunks, bytes))
}

/** Reads and drops the rest of a stream, cancelling it if more than `cap` bytes arrive in all. */
const drain = async (reader: ReadableStreamDefaultReader<Uint8Array>, read: number, cap: number): Promise<void> => {
  for (let bytes = read; ; ) {
    if (bytes > cap) {
      await reader.cancel().catch(() => {})
      return
    }
    const { done, value } = await reader.read()
    if (done) return
    bytes += value.byteLength
  }
}

const concat = (chunks: readonly Uint8Array[], bytes: number): Uint8Array => {
  const all = new Uint8Array(bytes)
  let offset = 0
  for (const chunk of chunks) {
    all.set(chunk, offset)
    offset += chunk.byteLength
  }
  return all
}
