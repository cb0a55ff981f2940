import type { BatchReason } from '../../shared/protocol.ts'
import type { DispatchPolicy } from '../repository/model-config.ts'

/** The batching settings the policy reads; times in whatever unit the caller's clock counts. */
export interface BatchPolicy {
  /** Off: every request runs alone, in arrival order. */
  batching: boolean
  dispatch: DispatchPolicy
  maxBatchSize: number
  maxQueueDelay: number
  preferredBatchSizes: readonly number[]
}

/** What the policy reads of a queue: the batcher's queue and the simulator's replica are both one. */
export interface PolicyQueue {
  /** The oldest waiting request, undefined when nothing waits. */
  peek(): { readonly shape: string; readonly enqueuedAt: number } | undefined
  /** Rows waiting with `shape`. */
  rowsOf(shape: string): number
  /** A shape other than `shape` with at least `rows` rows waiting, if there is one. */
  otherShapeWith(shape: string, rows: number): string | undefined
  /** The largest sum in `sizes` that the rows of `shape`'s requests add up to in arrival order, without passing `limit`; 0 if none. */
  largestPrefixIn(shape: string, sizes: readonly number[], limit: number): number
}

/**
 * The policy's answer, filled in place by `dueBatch` so the hot path allocates nothing: a batch of
 * `shape` (at most `count` requests and `rows` rows, in arrival order, stopping at the first that
 * does not fit) leaves now for `reason`, or with `wait` nothing leaves before `until`.
 */
export class Due {
  reason: BatchReason | 'wait' = 'wait'
  shape = ''
  count = 0
  rows = 0
  until = Infinity
}

const send = (into: Due, reason: BatchReason, shape: string, count: number, rows: number): Due => {
  into.reason = reason
  into.shape = shape
  into.count = count
  into.rows = rows
  return into
}

const wait = (into: Due, until: number): Due => {
  into.reason = 'wait'
  into.until = until
  return into
}

/**
 * The batch due now, if one is. A batch leaves only for a free instance; which one, by the
 * dispatch policy (see `Batcher`): without batching the oldest request alone (`single`); a
 * shape with `maxBatchSize` rows waiting goes `full`; idle dispatch sends the oldest request's
 * shape at once (`idle`); delay dispatch waits for a preferred size (`preferred`) or until the
 * oldest request has waited `maxQueueDelay` (`delay`, at once when closing). A full batch of a
 * younger shape need not wait for the oldest request's delay.
 */
export const dueBatch = (policy: BatchPolicy, queue: PolicyQueue, now: number, instanceFree: boolean, closing: boolean, into: Due): Due => {
  const oldest = queue.peek()
  if (!oldest || !instanceFree) return wait(into, Infinity)
  const { batching, dispatch, maxBatchSize, maxQueueDelay, preferredBatchSizes } = policy
  const { shape } = oldest
  if (!batching) return send(into, 'single', shape, 1, Infinity)
  if (queue.rowsOf(shape) >= maxBatchSize) return send(into, 'full', shape, Infinity, maxBatchSize)
  if (dispatch === 'idle') return send(into, 'idle', shape, Infinity, maxBatchSize)
  const preferred = preferredBatchSizes.length === 0 ? 0 : queue.largestPrefixIn(shape, preferredBatchSizes, maxBatchSize)
  if (preferred > 0) return send(into, 'preferred', shape, Infinity, preferred)
  // The same sum as the `until` a wait answers, so a timer set for it always finds the batch due.
  const dueAt = oldest.enqueuedAt + maxQueueDelay
  if (closing || now >= dueAt) return send(into, 'delay', shape, Infinity, maxBatchSize)
  const other = queue.otherShapeWith(shape, maxBatchSize)
  if (other !== undefined) return send(into, 'full', other, Infinity, maxBatchSize)
  return wait(into, dueAt)
}
