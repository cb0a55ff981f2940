import type { Context, MiddlewareHandler } from 'hono'
import { InferenceError, badRequest } from '../errors.ts'
import type { BackendEnv } from '../env.ts'
import { quoteInput } from '../../shared/quote-input.ts'
import { requestHeader } from '../request-header.ts'

export interface RequireJsonOptions {
  /** Largest body accepted, in bytes (413 beyond). */
  maxBytes: number
  /** Accept an empty body (as `undefined`), for endpoints whose body is optional. */
  optional?: boolean
}

const JSON_TYPE = /^application\/json\s*(;|$)/i
const isJson = (type: string) => JSON_TYPE.test(type.trim())

/** The connection closes after a 413: what the client still sends is not read as a next request. */
const tooLarge = (maxBytes: number) => new InferenceError(413, `request body exceeds ${maxBytes} bytes`, { connection: 'close' }, 'too_large')

/**
 * How much of an oversized chunked body is still read (and dropped) before the stream is
 * cancelled, as a multiple of the limit. Cancelling at once tore the socket down under a
 * keep-alive client still sending: its next request on that socket failed ("other side closed").
 */
const DRAIN_FACTOR = 4

/** Reads and drops the rest of a stream, cancelling it once more than `cap` bytes arrived in all. */
const drain = async (reader: ReadableStreamDefaultReader<Uint8Array>, read: number, cap: number): Promise<void> => {
  for (let bytes = read; bytes <= cap; ) {
    const { done, value } = await reader.read()
    if (done) return
    bytes += value.byteLength
  }
  await reader.cancel().catch(() => {})
}

/**
 * Reads a body of unknown length (chunked) while counting, so a client cannot make us buffer
 * more than the limit. Bodies with a Content-Length never take this path.
 */
const readCapped = async (stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> => {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: false })
  const reader = stream.getReader()
  let size = 0
  let text = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return text + decoder.decode()
    size += value.byteLength
    if (size > maxBytes) {
      await drain(reader, size, maxBytes * DRAIN_FACTOR)
      throw tooLarge(maxBytes)
    }
    text += decoder.decode(value, { stream: true })
  }
}

/**
 * The JSON body of a request: refuses bodies over the limit (413), other media types or content
 * codings (415) and malformed JSON (400). Checks the declared length before reading, and reads
 * through Hono's plain `text()` so the Node adapter keeps its fast path. Undefined for an empty
 * body when `optional`.
 */
export const readJsonBody = async (c: Context<BackendEnv>, { maxBytes, optional = false }: RequireJsonOptions): Promise<unknown> => {
  const declared = requestHeader(c, 'content-length')
  if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  const encoding = requestHeader(c, 'content-encoding')?.trim().toLowerCase()
  if (encoding && encoding !== 'identity') {
    throw new InferenceError(415, `unsupported Content-Encoding ${quoteInput(encoding)}; send uncompressed JSON`, { 'accept-encoding': 'identity' }, 'unsupported_media_type')
  }
  const body = declared === undefined && requestHeader(c, 'transfer-encoding') !== undefined ? c.req.raw.body : null
  const text = body ? await readCapped(body, maxBytes) : await c.req.text()
  if (text.length === 0 && optional) return undefined
  const type = requestHeader(c, 'content-type') ?? ''
  if (!isJson(type)) {
    throw new InferenceError(415, `expected Content-Type application/json, got ${type ? quoteInput(type) : 'none'}`, {}, 'unsupported_media_type')
  }
  if (text.length === 0) throw badRequest('request body is empty; expected a JSON object')
  try {
    return JSON.parse(text)
  } catch (err) {
    throw badRequest(`malformed JSON: ${(err as Error).message}`)
  }
}

/** `readJsonBody` as a middleware: the body goes into `c.var.body`. */
export const requireJson = (options: RequireJsonOptions): MiddlewareHandler<BackendEnv> =>
  async function requireJson(c, next) {
    c.set('body', await readJsonBody(c, options))
    await next()
  }
