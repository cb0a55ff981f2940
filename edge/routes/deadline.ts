import { HEADERS } from '../../shared/headers.ts'
import { Problem } from '../problem.ts'

/** The client's X-Request-Deadline-Ms, checked; the default when absent. */
export const deadlineOf = (header: string | undefined, fallback: number, max: number): number => {
  if (header === undefined) return fallback
  if (!/^[1-9][0-9]{0,6}$/.test(header.trim()) || Number(header) > max) {
    throw new Problem(400, 'Bad Request', `${HEADERS.deadlineMs} must be a whole number of milliseconds between 1 and ${max}`)
  }
  return Number(header)
}
