import type { Stage } from '../stage.ts'

export interface DiscardBounds {
  /** Most bytes of an unread body read and dropped before the answer goes out. */
  maxBytes: number
  /** Longest wait for them. */
  maxMs: number
}

/**
 * 16 MiB (64 times the default body limit) and 5 s: enough for a client on a slow uplink to
 * finish an upload a little past the limit, little enough that an endless upload cannot hold the
 * request open.
 */
export const DISCARD_BOUNDS: DiscardBounds = { maxBytes: 16 * 1024 * 1024, maxMs: 5_000 }

/**
 * Reads and drops what is left of `stream`, until its end, `maxBytes` or `maxMs`, whichever
 * comes first; then cancels it. A stream that fails (the client went away) has nothing more to give.
 */
export const discardBody = async (stream: ReadableStream<Uint8Array>, { maxBytes, maxMs }: DiscardBounds): Promise<void> => {
  const reader = stream.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), maxMs)
  })
  try {
    for (let bytes = 0; bytes <= maxBytes; ) {
      const next = await Promise.race([reader.read(), late])
      if (next === 'late') break
      if (next.done) return
      bytes += next.value.byteLength
    }
    await reader.cancel()
  } catch {
    // Failed or cancelled: either way there is nothing left to read.
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Lingering close, as nginx does it: when the answer is ready but the request's body was never
 * read (refused before it: 401, 404, 405, 413, 429…) or only in part (a chunked body past the
 * limit), the rest is read and dropped within `bounds` before the answer goes out. A client that
 * writes its whole body before it reads (Node's fetch, many SDKs) then gets the answer instead of
 * EPIPE on a connection closed under its upload, and `wrangler dev`'s proxy does not break the
 * next request over a body left unread. A declared Content-Length past `maxBytes` is cancelled at
 * once: that client cannot be saved, and one that waits before sending gets its answer promptly.
 * First of every request, so the drop is no part of the request's logged duration.
 */
export const discardUnreadBody = (bounds: DiscardBounds = DISCARD_BOUNDS): Stage<object> =>
  async function discardUnreadBody(c, next) {
    await next()
    const body = c.req.raw.body
    // Locked: read to its end (`readBodyText` releases a stream it stops reading at the limit).
    if (body === null || body.locked) return
    if (Number(c.req.header('content-length') ?? 0) > bounds.maxBytes) {
      await body.cancel().catch(() => {})
      return
    }
    await discardBody(body, bounds)
  }
