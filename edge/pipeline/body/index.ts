import { quoteInput } from '../../../shared/quote-input.ts'
import { BodyAborted, BodyTooLarge, readBodyText } from './read-text.ts'
import { CLIENT_CLOSED_REQUEST, Problem } from '../../problem.ts'
import type { Stage } from '../stage.ts'
import type { EdgeSettings } from '../../bindings.ts'

export interface BodyVariables {
  /** The body of a POST or PUT as `requireJson` read it (within the size limit); parse it with `jsonBody`. */
  bodyText: string
}

type BodyNeeds = { isolate: { settings: Pick<EdgeSettings, 'maxBodyBytes'> } }

const isJson = (type: string) => /^application\/json\s*(;|$)/i.test(type.trim())

/**
 * Refuses what is not a JSON body of acceptable size before anything parses it: 413 past the
 * limit (declared, or counted while the body streams in), 415 for other media types or content
 * codings; the limit is the isolate's `MAX_BODY_BYTES`. Mounted on the routes that take a body,
 * after auth and the rate limit. The body is read here, once, and handed on as `bodyText`; what a
 * refusal leaves unread is dropped by `discardUnreadBody`. A client that goes away before its body
 * has arrived gets 499 (client-closed): logged as its doing, not the edge's.
 */
export const requireJson = (): Stage<BodyNeeds, BodyVariables> =>
  async function requireJson(c, next) {
    const { maxBodyBytes: maxBytes } = c.get('isolate').settings
    const declared = c.req.header('content-length')
    if (declared !== undefined && Number(declared) > maxBytes) {
      throw new Problem(413, 'Payload Too Large', `request body is ${declared} bytes; the limit is ${maxBytes}`)
    }
    const type = c.req.header('content-type') ?? ''
    if (!isJson(type)) {
      throw new Problem(415, 'Unsupported Media Type', `expected Content-Type application/json, got ${type ? quoteInput(type) : 'none'}`)
    }
    const encoding = c.req.header('content-encoding')?.trim().toLowerCase()
    if (encoding && encoding !== 'identity') {
      throw new Problem(415, 'Unsupported Media Type', `Content-Encoding ${quoteInput(encoding)} is not accepted; send uncompressed JSON`, { headers: { 'accept-encoding': 'identity' } })
    }
    const text = await readBodyText(c.req.raw, maxBytes).catch((err: unknown) => {
      if (err instanceof BodyTooLarge) throw new Problem(413, 'Payload Too Large', err.message)
      if (err instanceof BodyAborted) throw new Problem(CLIENT_CLOSED_REQUEST, 'Client Closed Request', err.message, { slug: 'client-closed' })
      throw err
    })
    c.set('bodyText', text)
    await next()
  }
