import { barChart } from '../charts.ts'
import { h, table } from '../dom.ts'
import type { BackendStats } from '../api.ts'
import type { Snapshot } from '../snapshot.ts'

type VersionStats = BackendStats['versions'][number]
type ReplicaStats = BackendStats['replicas'][number]

const sumOf = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0)

/** One row per replica: what it served and holds, beside the total the cards below show. */
const replicaRow = (r: ReplicaStats) => [
  h('span', { class: 'pod' }, r.pod ?? 'the one BACKEND_URL reaches'),
  r.ready === null ? 'unknown' : r.ready ? 'yes' : 'no',
  String(r.versions.reduce((n, v) => n + sumOf(v.requests_by_status), 0)),
  String(r.versions.reduce((n, v) => n + v.batch_size.count, 0)),
  String(r.versions.reduce((n, v) => n + v.queue_depth_rows, 0)),
  String(r.rejections.reduce((n, x) => n + x.count, 0)),
  new Date(r.published_at ?? r.fetched_at).toLocaleTimeString(),
]

/** Counts by key, each read as what it is: "HTTP 200: 23 requests", "full: 4 batches". */
const counts = (record: Record<string, number>, key: (k: string) => string, unit: string) =>
  Object.entries(record).map(([k, n]) => `${key(k)}: ${n.toLocaleString('en-US')} ${unit}`).join(' · ') || '–'

const versionCard = (v: VersionStats): HTMLElement => {
  const chart = h('div', { class: 'chart batch-chart' })
  const { buckets, count, sum } = v.batch_size
  // The backend names a version's provider while it is loaded and drops it on unload; its counters stay.
  const loaded = v.execution_provider !== null
  const card = h('article', { class: `backend-version${loaded ? '' : ' unloaded'}`, attrs: { 'data-model': v.model, 'data-version': v.version, 'data-loaded': String(loaded) } },
    h('h3', {}, `${v.model} v${v.version}`, loaded ? null : h('span', { class: 'badge unloaded' }, 'unloaded')),
    table([], [
      ['execution provider', h('span', { class: 'provider' }, v.execution_provider ?? 'none (not loaded: counts since the backend started)')],
      ['queue depth', h('span', { class: 'queue-depth' }, `${v.queue_depth_rows} rows${v.queue_capacity_rows === null ? '' : ` of ${v.queue_capacity_rows}`}`)],
      ['requests by status', h('span', { class: 'requests-by-status' }, counts(v.requests_by_status, (status) => `HTTP ${status}`, 'requests'))],
      ['batches by reason', h('span', { class: 'batch-reasons' }, counts(v.batches_by_reason, (reason) => reason, 'batches'))],
      ['mean batch', count === 0 ? '–' : `${(sum / count).toFixed(1)} rows over ${count} batches`],
    ], { class: 'facts' }),
    chart,
  )
  const shown = buckets.filter((b) => b.le !== '+Inf')
  if (count > 0) barChart(chart, shown.map((_, i) => i), { label: 'batches', values: shown.map((b) => b.count), color: 'stable' }, { x: 'batch size (rows, at most)', y: 'batches' }, (i) => String(shown[i]?.le ?? ''))
  return card
}

/** The backend's queues, batches and refusals since each replica started: per replica, then summed per model version. */
export const backendView = (snapshot: Snapshot): HTMLElement => {
  const stats = snapshot.backend
  if (typeof stats === 'string') return h('p', { class: 'error' }, `The backend's stats could not be read: ${stats}`)
  const byStatus = (status: number) => stats.rejections.filter((r) => r.status === status).reduce((n, r) => n + r.count, 0)
  return h('div', {},
    h('p', {}, h('strong', {}, 'Ready: '), stats.ready === null ? 'unknown' : stats.ready ? 'yes' : 'no', ` · read ${new Date(stats.fetched_at).toLocaleTimeString()}`),
    h('h2', {}, 'Replicas'),
    h('p', { class: 'replica-source', attrs: { 'data-source': stats.source } }, stats.source === 'redis'
      ? `Every replica's snapshot from Redis (${stats.replicas.length}); the counts below are their sum.`
      : 'One replica only: the one BACKEND_URL reaches (no Redis configured, or no replica has published to it yet).'),
    table(['pod', 'ready', 'requests', 'batches', 'queued rows', 'refused', 'as of'], [
      ...stats.replicas.map(replicaRow),
      [h('strong', {}, 'total'), ...replicaRow({ ...stats, pod: null, published_at: null }).slice(1)],
    ], { class: 'replicas' }),
    h('h2', {}, 'Refusals'),
    h('p', { class: 'rejection-totals' }, `429 (queue full or deadline unmeetable): ${byStatus(429)} · 504 (deadline passed in the queue): ${byStatus(504)}`),
    stats.rejections.length > 0
      ? table(['model', 'reason', 'status', 'requests'], stats.rejections.map((r) => [r.model, r.reason, r.status === null ? '?' : String(r.status), String(r.count)]), { class: 'rejections' })
      : h('p', { class: 'muted' }, 'No request has been refused.'),
    h('h2', {}, 'Model versions'),
    // Loaded versions first; unloaded ones keep their counts since the backend started.
    h('div', { class: 'cards' }, ...[...stats.versions].sort((a, b) => Number(b.execution_provider !== null) - Number(a.execution_provider !== null)).map(versionCard)),
  )
}
