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
export const isJson = (type: string) => JSON_TYPE.test(type.trim())

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
const readCapped = async (stream: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array> => {
  const reader = stream.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await drain(reader, size, maxBytes * DRAIN_FACTOR)
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks, size)
}

/** The checks made before a byte is read (413, 415); answers the stream to read capped when the body has no declared length. */
const bodyToRead = (c: Context<BackendEnv>, maxBytes: number): ReadableStream<Uint8Array> | null => {
  const declared = requestHeader(c, 'content-length')
  if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  const encoding = requestHeader(c, 'content-encoding')?.trim().toLowerCase()
  if (encoding && encoding !== 'identity') {
    throw new InferenceError(415, `unsupported Content-Encoding ${quoteInput(encoding)}; send uncompressed JSON`, { 'accept-encoding': 'identity' }, 'unsupported_media_type')
  }
  return declared === undefined && requestHeader(c, 'transfer-encoding') !== undefined ? c.req.raw.body : null
}

/** A request's raw body, under the same size and coding rules as a JSON body. */
export const readBodyBytes = async (c: Context<BackendEnv>, maxBytes: number): Promise<Uint8Array> => {
  const body = bodyToRead(c, maxBytes)
  return body ? readCapped(body, maxBytes) : new Uint8Array(await c.req.arrayBuffer())
}

/** JSON text as a value, or a 400 naming what is malformed. */
export const parseJsonText = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch (err) {
    throw badRequest(`malformed JSON: ${(err as Error).message}`)
  }
}

/**
 * The JSON body of a request: refuses bodies over the limit (413), other media types or content
 * codings (415) and malformed JSON (400). Checks the declared length before reading, and reads
 * through Hono's plain `text()` so the Node adapter keeps its fast path. Undefined for an empty
 * body when `optional`.
 */
export const readJsonBody = async (c: Context<BackendEnv>, { maxBytes, optional = false }: RequireJsonOptions): Promise<unknown> => {
  const body = bodyToRead(c, maxBytes)
  const text = body ? new TextDecoder().decode(await readCapped(body, maxBytes)) : await c.req.text()
  if (text.length === 0 && optional) return undefined
  const type = requestHeader(c, 'content-type') ?? ''
  if (!isJson(type)) {
    throw new InferenceError(415, `expected Content-Type application/json, got ${type ? quoteInput(type) : 'none'}`, {}, 'unsupported_media_type')
  }
  if (text.length === 0) throw badRequest('request body is empty; expected a JSON object')
  return parseJsonText(text)
}

/** `readJsonBody` as a middleware: the body goes into `c.var.body`. */
export const requireJson = (options: RequireJsonOptions): MiddlewareHandler<BackendEnv> =>
  async function requireJson(c, next) {
    c.set('body', await readJsonBody(c, options))
    await next()
  }
