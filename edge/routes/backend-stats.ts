import { HEADERS } from '../../shared/headers.ts'
import { parsePrometheusText, type PrometheusSample } from '../../shared/prometheus-text.ts'
import { backendStatsOf } from '../console/backend-stats.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { backendStats as backendStatsSchema } from '../openapi/schemas.ts'
import type { Responder } from '../pipeline/stage.ts'
import { Problem } from '../problem.ts'
import { answer, route } from './route.ts'

const DEFAULT_TIMEOUT_MS = 5_000

export interface BackendStatsOptions {
  /** Bound of the one read of the backend's metrics. */
  timeoutMs?: number
}

/**
 * `GET /v1/backend/stats`: queue depth, batch sizes and reasons, requests and refusals by status,
 * and the execution provider of every model version, read from the backend's Prometheus metrics
 * with the edge's `INFER_TOKEN`. It reads `BACKEND_URL` only, as the drift route does: the Lambda
 * fallback keeps no such counters.
 */
export const backendStats = ({ timeoutMs = DEFAULT_TIMEOUT_MS }: BackendStatsOptions = {}): Responder<{ requestId: string }> =>
  async function backendStats(c) {
  const base = c.env?.BACKEND_URL?.replace(/\/+$/, '')
  if (!base) throw new Problem(503, 'Service Unavailable', 'this edge has no inference tier configured', { slug: 'backend-unconfigured' })
  const token = c.env.INFER_TOKEN
  let res: Response
  try {
    res = await fetch(`${base}/metrics`, {
      headers: { [HEADERS.requestId]: c.get('requestId'), ...(token ? { authorization: `Bearer ${token}` } : {}) },
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (err) {
    throw new Problem(503, 'Service Unavailable', `the inference tier's metrics did not answer: ${err instanceof Error ? err.message : String(err)}`, { slug: 'backend-stats-unavailable', headers: { 'retry-after': '5' } })
  }
  if (!res.ok) {
    await res.body?.cancel()
    throw new Problem(502, 'Bad Gateway', `the inference tier answered ${res.status} for its metrics`, { slug: 'backend-stats-unavailable' })
  }
  const text = await res.text()
  let samples: PrometheusSample[]
  try {
    samples = parsePrometheusText(text)
  } catch {
    // The parser's message quotes the body, which a problem never carries.
    throw new Problem(502, 'Bad Gateway', 'the inference tier\'s metrics are not Prometheus text', { slug: 'backend-stats-unavailable' })
  }
  return c.json(backendStatsOf(samples, new Date()))
  }

export const backendStatsRoutes = (options: BackendStatsOptions = {}) => [
  route({
    method: 'get',
    path: '/v1/backend/stats',
    guard: 'admin',
    operationId: 'getBackendStats',
    summary: 'The backend\'s queues, batches, refusals and execution provider per model version',
    description: 'Read from the backend\'s Prometheus metrics (BACKEND_URL, with INFER_TOKEN), at most 5 s; counts since the backend started. What the operator console\'s Backend view shows.',
    tag: 'admin',
    answers: { 200: { description: 'the backend\'s stats', schema: backendStatsSchema, headers: RATE_LIMIT } },
    problems: [502],
    handle: answer(backendStats(options)),
  }),
] as const
