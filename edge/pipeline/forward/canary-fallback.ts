import { Problem } from '../../problem.ts'
import { NonFiniteOutput } from '../respond/predictions.ts'
import type { FallbackReason, RouteVariables } from '../route/index.ts'
import { callSpan } from '../trace/spans.ts'
import type { TraceVariables } from '../trace/index.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'


/**
 * Whether a failed canary call is worth retrying on stable, and why: anything a healthy version
 * could answer instead — a 5xx of the tier or the edge (timeout 504, unavailable or circuit open
 * 503, a refusal of the tensor the edge built 502), a 429, a non-finite output, an unexpected
 * error. A 4xx other than 429 is a verdict on the request itself (bad tensor, too large): stable
 * would refuse it the same way.
 */
export const fallbackReason = (err: unknown): FallbackReason | undefined => {
  if (err instanceof NonFiniteOutput) return 'non_finite'
  if (!(err instanceof Problem)) return 'error'
  if (err.status === 504) return 'timeout'
  return err.status >= 500 || err.status === 429 ? 'error' : undefined
}

export interface CanaryFallbackOptions {
  /**
   * Share of what remains of the deadline held back from the canary for the retry on stable:
   * without it a canary that times out would leave stable nothing.
   */
  stableShare?: number
  /** Least time left worth a retry; with less, the canary's failure is the answer. */
  minRetryMs?: number
  now?: () => number
}

export type FallbackNeeds = RouteVariables & TraceVariables & { model: { name: string }; isolate: { requestMetrics: RequestMetrics } }

/** What the fallback uses of a request's context: any stage's whose variables include these. */
export interface FallbackSlots {
  get<K extends keyof FallbackNeeds>(key: K): FallbackNeeds[K]
  set<K extends keyof FallbackNeeds>(key: K, value: FallbackNeeds[K]): void
}

/** One call to `version` by `deadlineAt`, sending `traceparent`; rejects on any failure, a bad answer included. */
export type Attempt<T> = (version: number, deadlineAt: number, traceparent: string) => Promise<T>

/**
 * Runs `attempt` on the version the request was routed to. For a request the rollout sent to
 * its canary (the route names the stable arm it may fall back to; never a pinned request or a
 * shadow copy), the canary gets the deadline less `stableShare` of it, and a failure stable can
 * cure is retried on stable with what remains, in its own span `edge.canary_fallback`: the
 * request is then stable's (assignment, headers, metrics) and counted as a canary fallback.
 * Stable's failure, if it fails too, is the answer.
 */
export const withCanaryFallback = async <T>(
  c: FallbackSlots,
  deadlineAt: number,
  attempt: Attempt<T>,
  { stableShare = 0.25, minRetryMs = 20, now = Date.now }: CanaryFallbackOptions = {},
): Promise<T> => {
  const routed = c.get('assignment')
  const { stable, ...canary } = routed
  if (stable === undefined) return attempt(routed.version, deadlineAt, c.get('traceparent'))
  let reason: FallbackReason | undefined
  try {
    return await attempt(routed.version, deadlineAt - Math.max(0, deadlineAt - now()) * stableShare, c.get('traceparent'))
  } catch (err) {
    reason = fallbackReason(err)
    if (reason === undefined || deadlineAt - now() < minRetryMs) throw err
  }
  const model = c.get('model').name
  c.get('isolate').requestMetrics.canaryFallback(model, String(routed.version), reason)
  c.set('assignment', { ...canary, variant: stable.variant, version: stable.version, canaryFallback: reason })
  const { traceparent, span } = callSpan(c, 'canary_fallback')
  try {
    const answer = await attempt(stable.version, deadlineAt, traceparent)
    span?.end()
    return answer
  } catch (err) {
    span?.end(err)
    throw err
  }
}
