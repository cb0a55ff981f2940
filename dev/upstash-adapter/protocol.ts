import { RedisReplyError, type RespArg, type RespValue } from './resp.ts'

/**
 * The Upstash REST request and response shapes, independent of HTTP plumbing:
 * a command is a JSON array (`["SET","k","v"]`); an answer is `{ result }` or `{ error }`;
 * `/pipeline` and `/multi-exec` take an array of commands and answer an array of those.
 * With `Upstash-Encoding: base64` every string in a result is base64 (numbers and null stay).
 */

export type UpstashAnswer = { result: unknown } | { error: string }

/** A request the adapter refuses before it reaches Redis (HTTP 400, `{ error }`). */
export class BadRequest extends Error {
  override name = 'BadRequest'
}

/**
 * Commands that would change the state of the one shared Redis connection (transactions, pub/sub,
 * database, protocol, reply mode) or block it for every other request. Transactions go through
 * `/multi-exec` instead.
 */
const REFUSED = new Set([
  'multi', 'exec', 'discard', 'watch', 'unwatch',
  'subscribe', 'psubscribe', 'ssubscribe', 'unsubscribe', 'punsubscribe', 'sunsubscribe', 'monitor',
  'select', 'swapdb', 'quit', 'reset', 'hello', 'auth', 'sync', 'psync', 'replconf', 'client',
  'blpop', 'brpop', 'brpoplpush', 'blmove', 'blmpop', 'bzpopmin', 'bzpopmax', 'bzmpop', 'wait', 'waitaof',
])

const isBlockingStreamRead = (name: string, args: readonly RespArg[]): boolean =>
  (name === 'xread' || name === 'xreadgroup') && args.some((a) => String(a).toLowerCase() === 'block')

/** Why this command cannot run through the adapter, or undefined if it can. */
export const refusal = (command: readonly RespArg[]): string | undefined => {
  const name = String(command[0]).toLowerCase()
  if (REFUSED.has(name) || isBlockingStreamRead(name, command)) {
    return `ERR command ${JSON.stringify(name)} is not supported by the Upstash REST adapter`
  }
  return undefined
}

/** Validates one JSON command: a non-empty array of strings, numbers or booleans. */
export const parseCommand = (value: unknown, where = 'command'): string[] => {
  if (!Array.isArray(value)) throw new BadRequest(`ERR ${where} must be a JSON array`)
  if (value.length === 0) throw new BadRequest(`ERR ${where} is empty`)
  return value.map((arg, i) => {
    if (typeof arg === 'string') return arg
    if (typeof arg === 'number' && Number.isFinite(arg)) return String(arg)
    if (typeof arg === 'boolean') return String(arg)
    throw new BadRequest(`ERR ${where}[${i}] must be a string, a finite number or a boolean`)
  })
}

/** Validates a `/pipeline` or `/multi-exec` body: a non-empty array of commands. */
export const parseCommands = (value: unknown): string[][] => {
  if (!Array.isArray(value)) throw new BadRequest('ERR request body must be a JSON array of commands')
  if (value.length === 0) throw new BadRequest('ERR request body has no commands')
  return value.map((command, i) => parseCommand(command, `command ${i}`))
}

/** Parses a JSON request body, turning a syntax error into a {@link BadRequest}. */
export const parseJson = (body: Buffer): unknown => {
  try {
    return JSON.parse(body.toString('utf8'))
  } catch (error) {
    throw new BadRequest(`ERR request body is not valid JSON: ${(error as Error).message}`)
  }
}

/**
 * A command in the URL path (`/set/k/v`), segments URL-decoded. A request body, if any, is the
 * last argument (as Upstash does for `POST /set/k` with the value in the body).
 */
export const parsePathCommand = (path: string, body: Buffer): RespArg[] => {
  const segments = path.slice(1).split('/')
  if (segments.length > 1 && segments[segments.length - 1] === '') segments.pop()
  const args: RespArg[] = segments.map((segment) => {
    try {
      return decodeURIComponent(segment)
    } catch {
      throw new BadRequest(`ERR path segment ${JSON.stringify(segment.slice(0, 40))} is not valid percent-encoding`)
    }
  })
  if (body.length > 0) args.push(body)
  return args
}

const toJsonValue = (value: RespValue, base64: boolean): unknown => {
  if (value === null || typeof value === 'number') return value
  if (Array.isArray(value)) return value.map((item) => toJsonValue(item, base64))
  // An error nested in an array (e.g. from a Lua table) has no Upstash shape of its own: its text.
  if (value instanceof RedisReplyError) return value.message
  if (typeof value === 'string') return base64 ? Buffer.from(value, 'utf8').toString('base64') : value
  return value.toString(base64 ? 'base64' : 'utf8')
}

/** One reply as an Upstash answer; an error reply's text is passed through verbatim. */
export const toAnswer = (reply: RespValue, base64: boolean): UpstashAnswer =>
  reply instanceof RedisReplyError ? { error: reply.message } : { result: toJsonValue(reply, base64) }

/**
 * The replies of `MULTI, ...commands, EXEC` as an Upstash `/multi-exec` answer: one answer per
 * command (runtime errors in place), or, if Redis discarded the transaction at queue time, the
 * first queue-time error verbatim (nothing ran).
 */
export const toTransactionAnswer = (replies: RespValue[], base64: boolean): UpstashAnswer[] | { error: string } => {
  const multi = replies[0]
  if (multi instanceof RedisReplyError) return { error: multi.message }
  const exec = replies[replies.length - 1]
  if (exec instanceof RedisReplyError) {
    const queued = replies.slice(1, -1).find((r) => r instanceof RedisReplyError)
    return { error: (queued ?? exec).message }
  }
  if (!Array.isArray(exec)) return { error: 'EXECABORT Transaction aborted' }
  return exec.map((reply) => toAnswer(reply, base64))
}
