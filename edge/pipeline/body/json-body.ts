import { parseJsonBody } from './json-error.ts'
import { Problem } from '../../problem.ts'

/** Most levels of arrays and objects a body may nest: a tensor of rank 8 inside a request is 11. */
export const MAX_JSON_DEPTH = 64
/**
 * Most values (scalars, arrays and objects) a body may hold. The body limit bounds this at its
 * default; a raised MAX_BODY_BYTES must not raise the work every later walk does without bound.
 */
export const MAX_JSON_VALUES = 262_144

/**
 * Refuses a parsed body nested deeper than `MAX_JSON_DEPTH` or holding more than
 * `MAX_JSON_VALUES` values. Iterative, so it is the one walk that sees a hostile body: every later
 * one (normalization, validation, dedupe keys, JSON.stringify on the way to the backend) recurses,
 * and 10,000 nested arrays overflow the stack.
 */
const checkJsonBounds = (body: unknown): void => {
  const pending: Array<{ value: unknown; depth: number }> = [{ value: body, depth: 0 }]
  let values = 0
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (++values > MAX_JSON_VALUES) {
      throw new Problem(400, 'Bad Request', `the request body holds more than ${MAX_JSON_VALUES} JSON values`, { slug: 'too-many-values' })
    }
    const { value, depth } = next
    if (typeof value !== 'object' || value === null) continue
    if (depth === MAX_JSON_DEPTH) {
      throw new Problem(400, 'Bad Request', `the request body is nested more than ${MAX_JSON_DEPTH} levels deep`, { slug: 'too-deeply-nested' })
    }
    for (const child of Array.isArray(value) ? value : Object.values(value)) pending.push({ value: child, depth: depth + 1 })
  }
}

/**
 * The request body parsed: the text `requireJson` read (within the size limit), or read here
 * when the route has no `requireJson` in front. A malformed body is a 400 naming line, column
 * and position of the first error; one nested or sized past the bounds above is a 400 naming them.
 */
export const jsonBody = (text: string): unknown => {
  const parsed = parseJsonBody(text)
  if (!parsed.ok) {
    const { line, column, position, reason } = parsed.error
    throw new Problem(400, 'Bad Request', `the request body is not valid JSON: ${reason} at line ${line}, column ${column} (position ${position})`, {
      slug: 'malformed-json',
    })
  }
  checkJsonBounds(parsed.value)
  return parsed.value
}
