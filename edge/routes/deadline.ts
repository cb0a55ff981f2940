import { parseDeadlineMs } from '../../shared/headers.ts'
import { Problem } from '../problem.ts'

/** The client's X-Request-Deadline-Ms, checked; the default when absent. */
export const deadlineOf = (header: string | undefined, fallback: number, max: number): number => {
  if (header === undefined) return fallback
  const ms = parseDeadlineMs(header, max)
  if (typeof ms !== 'number') throw new Problem(400, 'Bad Request', ms.invalid)
  return ms
}
