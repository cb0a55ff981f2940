import { BACKEND_METRICS as NAMES } from '../../shared/backend-metrics.ts'
import type { PrometheusSample } from '../../shared/prometheus-text.ts'
import type { BackendStats, Rejection, VersionStats } from './backend-stats-shape.ts'

/** The status the backend answers each refusal reason with (backend/batcher, backend/infer). */
const REJECTION_STATUS: Readonly<Record<string, number>> = {
  queue_full: 429,
  deadline_unmeetable: 429,
  expired: 504,
  draining: 503,
  too_many_rows: 413,
  invalid_request: 400,
}

/** The console's view of a backend's metrics: per model version, and its refusals. */
export const backendStatsOf = (samples: readonly PrometheusSample[], now: Date): BackendStats => {
  const versions = new Map<string, VersionStats>()
  const versionOf = ({ model, version }: Record<string, string>): VersionStats => {
    const id = `${model}\n${version}`
    let stats = versions.get(id)
    if (!stats) {
      stats = { model, version, execution_provider: null, queue_depth_rows: 0, queue_capacity_rows: null, requests_by_status: {}, batches_by_reason: {}, batch_size: { buckets: [], count: 0, sum: 0 } }
      versions.set(id, stats)
    }
    return stats
  }
  const cumulative = new Map<VersionStats, Array<{ le: number; count: number }>>()
  const rejections: Rejection[] = []
  let ready: boolean | null = null
  for (const { name, labels, value } of samples) {
    const versioned = labels.model !== undefined && labels.version !== undefined
    if (name === NAMES.ready) ready = value === 1
    else if (name === NAMES.rejected && labels.model !== undefined) {
      rejections.push({ model: labels.model, reason: labels.reason, status: REJECTION_STATUS[labels.reason] ?? null, count: value })
    } else if (!versioned) continue
    else if (name === NAMES.executionProvider && value === 1) versionOf(labels).execution_provider = labels.provider
    else if (name === NAMES.queueDepth) versionOf(labels).queue_depth_rows = value
    else if (name === NAMES.queueCapacity) versionOf(labels).queue_capacity_rows = value
    else if (name === NAMES.requests) versionOf(labels).requests_by_status[labels.status] = value
    else if (name === NAMES.batches) versionOf(labels).batches_by_reason[labels.reason] = value
    else if (name === `${NAMES.batchSize}_sum`) versionOf(labels).batch_size.sum = value
    else if (name === `${NAMES.batchSize}_count`) versionOf(labels).batch_size.count = value
    else if (name === `${NAMES.batchSize}_bucket`) {
      const stats = versionOf(labels)
      const list = cumulative.get(stats) ?? []
      list.push({ le: labels.le === '+Inf' ? Infinity : Number(labels.le), count: value })
      cumulative.set(stats, list)
    }
  }
  for (const [stats, list] of cumulative) {
    list.sort((a, b) => a.le - b.le)
    stats.batch_size.buckets = list.map(({ le, count }, i) => ({ le: le === Infinity ? '+Inf' : le, count: count - (list[i - 1]?.count ?? 0) }))
  }
  const order = (a: VersionStats, b: VersionStats) => (a.model === b.model ? Number(a.version) - Number(b.version) : a.model < b.model ? -1 : 1)
  return { fetched_at: now.toISOString(), ready, versions: [...versions.values()].sort(order), rejections }
}
