import { HEADERS } from '../../../shared/headers.ts'
import type { Stage } from '../stage.ts'
import { randomUuid } from '../../random-ids.ts'

export interface RequestIdVariables {
  requestId: string
  /** When the first stage saw the request (epoch ms): deadlines and Server-Timing count from here. */
  receivedAt: number
}

export interface RequestIdOptions {
  /** Incoming ids matching this are kept (so a client's trace joins ours); others are replaced. */
  accept?: RegExp
}

/** Gives every request an id, echoed in `X-Request-Id` and in every problem body, and notes when it arrived. */
export const requestId = ({ accept = /^[A-Za-z0-9._:-]{8,128}$/ }: RequestIdOptions = {}): Stage<object, RequestIdVariables> =>
  async function requestId(c, next) {
    c.set('receivedAt', Date.now())
    const incoming = c.req.header(HEADERS.requestId)
    const id = incoming !== undefined && accept.test(incoming) ? incoming : randomUuid()
    c.set('requestId', id)
    await next()
    c.res.headers.set(HEADERS.requestId, id)
  }
