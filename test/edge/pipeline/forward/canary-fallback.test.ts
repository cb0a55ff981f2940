import { ROOT_CONTEXT, SpanStatusCode } from '@opentelemetry/api'
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import { describe, expect, it } from 'vitest'
import { type FallbackSlots, fallbackReason, withCanaryFallback } from '../../../../edge/pipeline/forward/canary-fallback.ts'
import { BackendRefusal, deadlinePassed, tierRefusal } from '../../../../edge/backend-client/http.ts'
import { requestMetricsExposition } from '../../../../edge/exposition/requests.ts'
import { RequestMetrics } from '../../../../edge/stores/tallies/tally.ts'
import { NonFiniteOutput } from '../../../../edge/pipeline/respond/predictions.ts'
import { type RoutedAssignment, fallbackFor } from '../../../../edge/pipeline/route/index.ts'
import { Problem } from '../../../../edge/problem.ts'
import type { Rollout } from '../../../../edge/rollout/rollout.ts'

describe('which canary failures are retried on stable', () => {
  it.each([
    ['a non-finite output', new NonFiniteOutput(), 'non_finite'],
    ['the deadline passing', deadlinePassed('inference tier'), 'timeout'],
    ['a 504 the tier sent', tierRefusal('inference tier', 504, 'expired'), 'timeout'],
    ['the tier unavailable or its circuit open', new BackendRefusal(503, 'circuit open'), 'error'],
    ['the tier overloaded', tierRefusal('inference tier', 429, 'queue full'), 'error'],
    ['an execution error', tierRefusal('inference tier', 500, 'boom'), 'error'],
    ['a refusal of the tensor the edge built', new Problem(502, 'Bad Gateway', 'refused', { slug: 'backend-refused' }), 'error'],
    ['an unexpected error', new SyntaxError('bad JSON'), 'error'],
  ])('%s: retried (%s)', (_what, err, reason) => {
    expect(fallbackReason(err)).toBe(reason)
  })

  it.each([
    ['a bad tensor', tierRefusal('inference tier', 400, 'shape')],
    ['an unknown model or version', tierRefusal('inference tier', 404, 'unknown')],
    ['a request too large for any version', tierRefusal('inference tier', 413, 'too large')],
  ])('%s: the client\'s own request, not retried', (_what, err) => {
    expect(fallbackReason(err)).toBeUndefined()
  })
})

const rollout = (canaryVersion = 3): Rollout => ({
  salt: 's',
  arms: [{ variant: 'stable', version: 2, weight: 50 }, { variant: 'canary', version: canaryVersion, weight: 50 }],
  pinnable: [],
  canary: { variant: 'canary', baseline_variant: 'stable' },
} as unknown as Rollout)

describe('the arm a request falls back to', () => {
  it('is the baseline for a sticky canary request, and none for stable, pinned or unserved baselines', () => {
    const r = rollout()
    expect(fallbackFor(r, { variant: 'canary', version: 3, by: 'sticky' }, [2, 3])).toEqual({ variant: 'stable', version: 2 })
    expect(fallbackFor(r, { variant: 'stable', version: 2, by: 'sticky' }, [2, 3])).toBeUndefined()
    expect(fallbackFor(r, { variant: 'canary', version: 3, by: 'pin' }, [2, 3])).toBeUndefined()
    expect(fallbackFor(r, { variant: 'canary', version: 3, by: 'sticky' }, [3])).toBeUndefined()
    expect(fallbackFor({ ...r, canary: undefined } as unknown as Rollout, { variant: 'canary', version: 3, by: 'sticky' }, [2, 3])).toBeUndefined()
  })
})

const NOW = 1_000_000
const DEADLINE = NOW + 1_000

/** A request's context as the fallback sees it: the routed assignment, this isolate's metrics. */
const requestContext = (assignment: RoutedAssignment) => {
  const requestMetrics = new RequestMetrics()
  const vars = new Map<string, unknown>([['assignment', assignment], ['traceparent', '00-aa-bb-01'], ['model', { name: 'm' }], ['isolate', { requestMetrics }]])
  const c = { get: (key: string) => vars.get(key), set: (key: string, value: unknown) => vars.set(key, value) } as unknown as FallbackSlots
  return { c, requestMetrics }
}

/** Attempts that answer (or throw) in turn, recording the version and deadline each got. */
const attempts = (...outcomes: Array<string | Error>) => {
  const calls: Array<[number, number]> = []
  const attempt = (version: number, deadlineAt: number) => {
    calls.push([version, deadlineAt])
    const outcome = outcomes[calls.length - 1]
    return outcome instanceof Error ? Promise.reject(outcome) : Promise.resolve(outcome)
  }
  return { calls, attempt }
}

const canaryRequest = (): RoutedAssignment => ({ variant: 'canary', version: 3, by: 'sticky', stable: { variant: 'stable', version: 2 } })
const fallbacks = async (metrics: RequestMetrics) =>
  requestMetricsExposition(await metrics.totals(), []).split('\n').filter((l) => l.startsWith('edge_infer_edge_canary_fallbacks_total'))

describe('withCanaryFallback', () => {
  it('retries a failed canary call on stable with what remains, and the request becomes stable\'s', async () => {
    const { c, requestMetrics } = requestContext(canaryRequest())
    const { calls, attempt } = attempts(new NonFiniteOutput(), 'from stable')
    expect(await withCanaryFallback(c, DEADLINE, attempt, { now: () => NOW })).toBe('from stable')
    // The canary got the deadline less a quarter of it; stable the whole rest.
    expect(calls).toEqual([[3, NOW + 750], [2, DEADLINE]])
    expect(c.get('assignment')).toEqual({ variant: 'stable', version: 2, by: 'sticky', canaryFallback: 'non_finite' })
    expect(await fallbacks(requestMetrics)).toEqual(['edge_infer_edge_canary_fallbacks_total{model="m",version="3",reason="non_finite"} 1'])
  })

  it('leaves a canary that answers, and a request with no stable arm, alone', async () => {
    const healthy = requestContext(canaryRequest())
    const one = attempts('from canary')
    expect(await withCanaryFallback(healthy.c, DEADLINE, one.attempt, { now: () => NOW })).toBe('from canary')
    expect(one.calls).toEqual([[3, NOW + 750]])
    expect(healthy.c.get('assignment').variant).toBe('canary')

    const pinned = requestContext({ variant: 'canary', version: 3, by: 'pin' })
    const failing = attempts(new NonFiniteOutput())
    await expect(withCanaryFallback(pinned.c, DEADLINE, failing.attempt, { now: () => NOW })).rejects.toBeInstanceOf(NonFiniteOutput)
    expect(failing.calls).toEqual([[3, DEADLINE]])
    expect(await fallbacks(pinned.requestMetrics)).toEqual([])
  })

  it('passes the client\'s own 4xx on from the canary, not retried', async () => {
    const { c, requestMetrics } = requestContext(canaryRequest())
    const { calls, attempt } = attempts(tierRefusal('inference tier', 400, 'shape'))
    await expect(withCanaryFallback(c, DEADLINE, attempt, { now: () => NOW })).rejects.toMatchObject({ status: 400 })
    expect(calls).toHaveLength(1)
    expect(c.get('assignment')).toEqual(canaryRequest())
    expect(await fallbacks(requestMetrics)).toEqual([])
  })

  it('answers with the canary\'s failure when too little of the deadline is left to retry', async () => {
    const { c } = requestContext(canaryRequest())
    let now = NOW
    const { calls, attempt } = attempts(deadlinePassed('inference tier'))
    // The canary times out a little past its share: 25 ms of the deadline are left, less than a retry needs.
    const timed = (version: number, deadlineAt: number) => ((now = deadlineAt + 5), attempt(version, deadlineAt))
    await expect(withCanaryFallback(c, NOW + 120, timed, { now: () => now, minRetryMs: 40 })).rejects.toMatchObject({ status: 504 })
    expect(calls).toEqual([[3, NOW + 90]])
    expect(c.get('assignment').variant).toBe('canary')
  })

  it('answers with stable\'s failure when stable fails too, still counted as a fallback', async () => {
    const { c, requestMetrics } = requestContext(canaryRequest())
    const { attempt } = attempts(deadlinePassed('inference tier'), new BackendRefusal(503, 'stable down'))
    await expect(withCanaryFallback(c, DEADLINE, attempt, { now: () => NOW })).rejects.toMatchObject({ status: 503, detail: 'stable down' })
    expect(c.get('assignment')).toMatchObject({ variant: 'stable', version: 2, canaryFallback: 'timeout' })
    expect(await fallbacks(requestMetrics)).toEqual(['edge_infer_edge_canary_fallbacks_total{model="m",version="3",reason="timeout"} 1'])
  })

  it('records the retry on stable in a span edge.canary_fallback, failed (ERROR) when stable fails too', async () => {
    const exporter = new InMemorySpanExporter()
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] })
    const tracer = provider.getTracer('test')
    const fallbackSpan = async (...outcomes: Array<string | Error>) => {
      exporter.reset()
      const { c } = requestContext(canaryRequest())
      c.set('tracing', { tracer, context: ROOT_CONTEXT })
      await withCanaryFallback(c, DEADLINE, attempts(...outcomes).attempt, { now: () => NOW }).catch(() => undefined)
      await provider.forceFlush()
      return exporter.getFinishedSpans().filter((s) => s.name === 'edge.canary_fallback')
    }
    const failed = await fallbackSpan(new BackendRefusal(503, 'canary down'), new BackendRefusal(503, 'stable down'))
    expect(failed.map((s) => [s.status.code, s.attributes['http.response.status_code']])).toEqual([[SpanStatusCode.ERROR, 503]])
    const answered = await fallbackSpan(new BackendRefusal(503, 'canary down'), 'from stable')
    expect(answered.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET])
  })
})
