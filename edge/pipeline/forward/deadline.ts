import { parseDeadlineMs } from '../../../shared/headers.ts'
import { Problem } from '../../problem.ts'

/**
 * When the caller stops waiting, in epoch milliseconds: `since` (when the request arrived) plus
 * the client's X-Request-Deadline-Ms, checked, or plus the default when it sends none.
 */
export const deadlineAt = (header: string | undefined, since: number, fallbackMs: number, maxMs: number): number => {
  if (header === undefined) return since + fallbackMs
  const ms = parseDeadlineMs(header, maxMs)
  if (typeof ms !== 'number') throw new Problem(400, 'Bad Request', ms.invalid)
  return since + ms
}
