import type { Context } from 'hono'
import { minuteOf } from '../../../shared/drift/report.ts'
import { inBackground } from '../../background.ts'
import type { GroundTruthStore } from '../../stores/ground-truth/ground-truth-store.ts'
import { type Attempt, type CanaryFallbackOptions, type FallbackNeeds, withCanaryFallback } from './canary-fallback.ts'
import { NotServed, Unanswered } from '../../backend-client/http.ts'
import type { RequestMetrics } from '../../stores/tallies/tally.ts'

/**
 * A call the backend never answered, counted against its version for the rollout controller
 * (the backend's own counts cannot hold it); a count Redis did not confirm is resent with its write
 * id by the store and logged here.
 */
const countUnanswered = (store: GroundTruthStore, model: string, version: number): Promise<void> =>
  store.edgeFailure(model, version, minuteOf(Date.now())).catch((err: unknown) => {
    console.log(JSON.stringify({ level: 'warn', msg: 'edge-side failure not counted', model, version, error: err instanceof Error ? err.message : String(err) }))
  })

type RoutedCallNeeds = Omit<FallbackNeeds, 'isolate'> & { isolate: { requestMetrics: RequestMetrics; groundTruth: GroundTruthStore } }

/** What a routed call uses of a request's context: the canary fallback's, the edge-failure counts, and where background work is kept alive. */
export interface RoutedCallSlots extends Pick<Context, 'executionCtx'> {
  get<K extends keyof RoutedCallNeeds>(key: K): RoutedCallNeeds[K]
  set<K extends keyof RoutedCallNeeds>(key: K, value: RoutedCallNeeds[K]): void
}

/**
 * The inference call of a routed request, the same on every route that makes one (predict and
 * the tensor route): `attempt` on the routed version, a canary's failure retried on stable
 * (`withCanaryFallback`), and each attempt the tier left unanswered (edge timeout, open circuit,
 * unreachable, on the fallback tier's path too) counted against its version.
 *
 * A version the backend says it does not serve, on a request the rollout routed, is a version
 * bump this isolate's catalog has not seen yet: the request is routed again by the backend's
 * serving set as it is now (`reroute`) and sent once more, within the same deadline. A pinned
 * request's 404 stands: it named the version.
 */
export const routedCall = async <T>(c: RoutedCallSlots, deadlineAt: number, attempt: Attempt<T>, options?: CanaryFallbackOptions): Promise<T> => {
  const counted: Attempt<T> = (version, at, traceparent) =>
    attempt(version, at, traceparent).catch((err: unknown) => {
      if (err instanceof Unanswered) inBackground(c, countUnanswered(c.get('isolate').groundTruth, c.get('model').name, version))
      throw err
    })
  const sentAt = Date.now()
  try {
    return await withCanaryFallback(c, deadlineAt, counted, options)
  } catch (err) {
    const reroute = c.get('reroute')
    // When the serving set cannot be read again in time, the backend's 404 is the answer.
    if (!(err instanceof NotServed) || reroute === undefined || !(await reroute(sentAt, deadlineAt).catch(() => false))) throw err
  }
  return withCanaryFallback(c, deadlineAt, counted, options)
}
