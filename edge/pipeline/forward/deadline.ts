import { HEADERS, parseDeadlineMs } from '../../../shared/headers.ts'
import { Problem } from '../../problem.ts'
import type { RequestIdVariables } from '../request-id/index.ts'

/** The deadline of a request that sends no X-Request-Deadline-Ms. */
const DEFAULT_DEADLINE_MS = 10_000
/** The longest X-Request-Deadline-Ms the edge accepts. */
const MAX_DEADLINE_MS = 60_000

/** What the request's deadline is read from: its header and when it arrived. */
export interface DeadlineSlots {
  req: { header(name: string): string | undefined }
  get(key: 'receivedAt'): RequestIdVariables['receivedAt']
}

/**
 * When the caller stops waiting, in epoch milliseconds: when the request arrived plus its
 * X-Request-Deadline-Ms, checked, or plus the default when it sends none. Every wait on the
 * request's path (the model's description, the model list, protocol reads, inference) gets what
 * remains of it: time spent in auth, limits and enrichment is the client's too.
 */
export const requestDeadline = (c: DeadlineSlots): number => {
  const header = c.req.header(HEADERS.deadlineMs)
  if (header === undefined) return c.get('receivedAt') + DEFAULT_DEADLINE_MS
  const ms = parseDeadlineMs(header, MAX_DEADLINE_MS)
  if (typeof ms !== 'number') throw new Problem(400, 'Bad Request', ms.invalid)
  return c.get('receivedAt') + ms
}
