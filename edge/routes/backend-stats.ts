import { HEADERS } from '../../shared/headers.ts'
import { parsePrometheusText, type PrometheusSample } from '../../shared/prometheus-text.ts'
import { REPLICA_STATS_MAX_PODS, REPLICA_STATS_PODS_KEY, replicaStatsKey, type ReplicaStatsSnapshot } from '../../shared/replica-stats.ts'
import { createUpstashClient, within } from '../../shared/upstash-client.ts'
import type { Bindings } from '../bindings.ts'
import { backendStatsOf, sumBackendStats } from '../console/backend-stats.ts'
import type { BackendStats, BackendStatsAnswer, ReplicaStats } from '../console/backend-stats-shape.ts'
import { RATE_LIMIT } from '../openapi/components.ts'
import { backendStats as backendStatsSchema } from '../openapi/schemas.ts'
import type { Responder } from '../pipeline/stage.ts'
import { Problem } from '../problem.ts'
import { answer, route } from './route.ts'

const DEFAULT_TIMEOUT_MS = 5_000

export interface BackendStatsOptions {
  /** Bound of the one read of the backend's metrics, and of each of the two Redis reads. */
  timeoutMs?: number
}

const unavailable = (what: string, err: unknown) =>
  new Problem(503, 'Service Unavailable', `${what} did not answer: ${err instanceof Error ? err.message : String(err)}`, { slug: 'backend-stats-unavailable', headers: { 'retry-after': '5' } })

/**
 * Every replica's live snapshot, newest first, at most `REPLICA_STATS_MAX_PODS`: the pod set's
 * names, then their keys (an expired one is skipped); undefined without Redis.
 */
const replicaSnapshots = async (env: Bindings, timeoutMs: number): Promise<ReplicaStatsSnapshot[] | undefined> => {
  const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = env
  if (!url || !token) return undefined
  const redis = createUpstashClient({ url, token, requestTimeoutMs: timeoutMs })
  try {
    const pods = await within(redis.zrange<string[]>(REPLICA_STATS_PODS_KEY, 0, REPLICA_STATS_MAX_PODS - 1, { rev: true }), timeoutMs)
    if (pods.length === 0) return []
    const values = await within(redis.mget<Array<string | null>>(...pods.map(replicaStatsKey)), timeoutMs)
    return values.flatMap((value) => (typeof value === 'string' ? [JSON.parse(value) as ReplicaStatsSnapshot] : []))
  } catch (err) {
    throw unavailable('Redis, where the replicas\' stats are', err)
  }
}

/** A replica's snapshot as stats; one whose text does not parse counts as empty rather than failing the others. */
const replicaOf = (snapshot: ReplicaStatsSnapshot, now: Date): ReplicaStats => {
  let samples: PrometheusSample[] = []
  try {
    samples = parsePrometheusText(snapshot.metrics)
  } catch {
    samples = []
  }
  return { pod: snapshot.pod, published_at: snapshot.published_at, ...backendStatsOf(samples, now) }
}

/**
 * `GET /v1/backend/stats`: queue depth, batch sizes and reasons, requests and refusals by status,
 * and the execution provider of every model version, read from the backend's Prometheus metrics
 * with the edge's `INFER_TOKEN`. It reads `BACKEND_URL` only, as the drift route does: the Lambda
 * fallback keeps no such counters.
 */
export const backendStats = ({ timeoutMs = DEFAULT_TIMEOUT_MS }: BackendStatsOptions = {}): Responder<{ requestId: string }> =>
  async function backendStats(c) {
  const now = new Date()
  const snapshots = await replicaSnapshots(c.env ?? {}, timeoutMs)
  if (snapshots && snapshots.length > 0) {
    const replicas = snapshots.map((s) => replicaOf(s, now))
    return c.json({ ...sumBackendStats(replicas, now), source: 'redis', replicas } satisfies BackendStatsAnswer)
  }
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
    throw unavailable('the inference tier\'s metrics', err)
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
  const one: BackendStats = backendStatsOf(samples, now)
  return c.json({ ...one, source: 'backend_url', replicas: [{ pod: null, published_at: null, ...one }] } satisfies BackendStatsAnswer)
  }

export const backendStatsRoutes = (options: BackendStatsOptions = {}) => [
  route({
    method: 'get',
    path: '/v1/backend/stats',
    guard: 'admin',
    operationId: 'getBackendStats',
    summary: 'The backend\'s queues, batches, refusals and execution provider per model version, per replica and summed',
    description: 'With Redis (UPSTASH_REDIS_REST_*): every replica\'s snapshot, which each writes there every STATS_PUBLISH_MS and which expires after three periods, summed. Without, or before any replica wrote one: the Prometheus metrics of the one replica BACKEND_URL reaches (with INFER_TOKEN); `source` says which. Each read at most 5 s; counts since each replica started. What the operator console\'s Backend view shows.',
    tag: 'admin',
    answers: { 200: { description: 'the backend\'s stats, summed and per replica', schema: backendStatsSchema, headers: RATE_LIMIT } },
    problems: [502, 503],
    handle: answer(backendStats(options)),
  }),
] as const
