import { MAX_QUOTED_CHARACTERS, quoteInput } from '../shared/quote-input.ts'

/**
 * How normalization and validation name fields and values in their complaints: paths like
 * `instances[3].age` or `entity.user_id` (the body itself is `""`), values as the client sent them.
 */

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/** `['instances', 3, 'age']` → `instances[3].age`; odd and long keys are quoted: `instances[0]["a b"]`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    else if (typeof key === 'string' && key.length <= MAX_QUOTED_CHARACTERS && IDENTIFIER.test(key)) out += out === '' ? key : `.${key}`
    else out += `[${quoteInput(String(key))}]`
  }
  return out
}

/** A value as a message shows it: `17.5`, `NaN`, `"abc"` (long strings cut), `an object`. */
export const describeValue = (value: unknown): string => {
  if (value === undefined) return 'nothing'
  if (value === null) return 'null'
  if (typeof value === 'number') return Object.is(value, -0) ? '0' : String(value)
  if (typeof value === 'string') return quoteInput(value)
  if (typeof value === 'boolean') return String(value)
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'object') return 'an object'
  return typeof value
}

/** A plain JSON object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** What went wrong, for a log line: the innermost cause's message when an error wraps one (a timeout wrapping the fetch error). */
export const messageOf = (error: unknown): string =>
  error instanceof Error ? (error.cause instanceof Error ? messageOf(error.cause) : error.message) : String(error)
