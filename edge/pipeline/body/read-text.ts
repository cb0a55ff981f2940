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
 * Reads a request body as UTF-8 text (a leading BOM dropped, invalid bytes replaced, as
 * `Request.text()` does), never more than `maxBytes`:
 * - with a declared Content-Length (checked against the limit before this is called) the
 *   runtime reads it in one go: in workerd that is native code, several times cheaper than a
 *   reader loop in JavaScript; the length is checked again, in case it was declared falsely;
 * - without one (chunked uploads) bytes are counted as they arrive, and a body past the limit is
 *   refused: nothing beyond the limit is kept, and the stream is released unfinished for
 *   `discardUnreadBody` to drop the rest. In Node this loop is also cheaper than
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
      reader.releaseLock()
      throw new BodyTooLarge(maxBytes)
    }
    chunks.push(value)
  }
  return decoder.decode(chunks.length === 1 ? chunks[0] : concat(chunks, bytes))
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
