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
  return { fetched_at: now.toISOString(), ready, versions: [...versions.values()].sort(byVersion), rejections }
}

const byVersion = (a: VersionStats, b: VersionStats) => (a.model === b.model ? Number(a.version) - Number(b.version) : a.model < b.model ? -1 : 1)

const addCounts = (into: Record<string, number>, from: Record<string, number>) => {
  for (const [key, n] of Object.entries(from)) into[key] = (into[key] ?? 0) + n
}

/**
 * Several replicas' stats as one: counts, queue depths and capacities added per model version and
 * per refusal; ready when any replica is (the service takes work); a provider kept only when every
 * replica that names one names the same.
 */
export const sumBackendStats = (replicas: readonly BackendStats[], now: Date): BackendStats => {
  const versions = new Map<string, VersionStats & { providers: Set<string> }>()
  const rejections = new Map<string, Rejection>()
  for (const stats of replicas) {
    for (const v of stats.versions) {
      const id = `${v.model}\n${v.version}`
      let sum = versions.get(id)
      if (!sum) {
        sum = { model: v.model, version: v.version, execution_provider: null, queue_depth_rows: 0, queue_capacity_rows: null, requests_by_status: {}, batches_by_reason: {}, batch_size: { buckets: [], count: 0, sum: 0 }, providers: new Set() }
        versions.set(id, sum)
      }
      if (v.execution_provider !== null) sum.providers.add(v.execution_provider)
      sum.queue_depth_rows += v.queue_depth_rows
      if (v.queue_capacity_rows !== null) sum.queue_capacity_rows = (sum.queue_capacity_rows ?? 0) + v.queue_capacity_rows
      addCounts(sum.requests_by_status, v.requests_by_status)
      addCounts(sum.batches_by_reason, v.batches_by_reason)
      sum.batch_size.count += v.batch_size.count
      sum.batch_size.sum += v.batch_size.sum
      for (const { le, count } of v.batch_size.buckets) {
        const bucket = sum.batch_size.buckets.find((b) => b.le === le)
        if (bucket) bucket.count += count
        else sum.batch_size.buckets.push({ le, count })
      }
    }
    for (const r of stats.rejections) {
      const id = `${r.model}\n${r.reason}`
      const sum = rejections.get(id)
      if (sum) sum.count += r.count
      else rejections.set(id, { ...r })
    }
  }
  const readiness = replicas.map((r) => r.ready).filter((r) => r !== null)
  const bound = (le: number | '+Inf') => (le === '+Inf' ? Infinity : le)
  return {
    fetched_at: now.toISOString(),
    ready: readiness.length === 0 ? null : readiness.some(Boolean),
    versions: [...versions.values()]
      .map(({ providers, ...v }) => ({ ...v, execution_provider: providers.size === 1 ? [...providers][0] : null, batch_size: { ...v.batch_size, buckets: v.batch_size.buckets.sort((a, b) => bound(a.le) - bound(b.le)) } }))
      .sort(byVersion),
    rejections: [...rejections.values()],
  }
}
