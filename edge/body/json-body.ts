import type { Context } from 'hono'
import type { AppEnv } from '../env.ts'
import { parseJsonBody } from '../normalize/json-error.ts'
import { Problem } from '../problem.ts'

/**
 * The request body parsed: the text `requireJson` read (within the size limit), or read here
 * when the route has no `requireJson` in front. A malformed body is a 400 naming line, column
 * and position of the first error.
 */
export const jsonBody = async (c: Context<AppEnv>): Promise<unknown> => {
  const parsed = parseJsonBody(c.get('bodyText') ?? (await c.req.text()))
  if (parsed.ok) return parsed.value
  const { line, column, position, reason } = parsed.error
  throw new Problem(400, 'Bad Request', `the request body is not valid JSON: ${reason} at line ${line}, column ${column} (position ${position})`, {
    slug: 'malformed-json',
  })
}
