import { barChart } from '../charts.ts'
import { h, table } from '../dom.ts'
import type { BackendStats } from '../api.ts'
import type { Snapshot } from '../snapshot.ts'

type VersionStats = BackendStats['versions'][number]

const counts = (record: Record<string, number>) => Object.entries(record).map(([k, n]) => `${k} ${n}`).join(' · ') || '–'

const versionCard = (v: VersionStats): HTMLElement => {
  const chart = h('div', { class: 'chart batch-chart' })
  const { buckets, count, sum } = v.batch_size
  const card = h('article', { class: 'backend-version', attrs: { 'data-model': v.model, 'data-version': v.version } },
    h('h3', {}, `${v.model} v${v.version}`),
    table([], [
      ['execution provider', h('span', { class: 'provider' }, v.execution_provider ?? 'unknown')],
      ['queue depth', h('span', { class: 'queue-depth' }, `${v.queue_depth_rows} rows${v.queue_capacity_rows === null ? '' : ` of ${v.queue_capacity_rows}`}`)],
      ['requests by status', counts(v.requests_by_status)],
      ['batches by reason', h('span', { class: 'batch-reasons' }, counts(v.batches_by_reason))],
      ['mean batch', count === 0 ? '–' : `${(sum / count).toFixed(1)} rows over ${count} batches`],
    ], { class: 'facts' }),
    chart,
  )
  const shown = buckets.filter((b) => b.le !== '+Inf')
  if (count > 0) barChart(chart, shown.map((_, i) => i), { label: 'batches', values: shown.map((b) => b.count), color: 'stable' }, { x: 'batch size (rows, at most)', y: 'batches' }, (i) => String(shown[i]?.le ?? ''))
  return card
}

/** The backend's queues, batches and refusals since it started, from its metrics. */
export const backendView = (snapshot: Snapshot): HTMLElement => {
  const stats = snapshot.backend
  if (typeof stats === 'string') return h('p', { class: 'error' }, `The backend's stats could not be read: ${stats}`)
  const byStatus = (status: number) => stats.rejections.filter((r) => r.status === status).reduce((n, r) => n + r.count, 0)
  return h('div', {},
    h('p', {}, h('strong', {}, 'Ready: '), stats.ready === null ? 'unknown' : stats.ready ? 'yes' : 'no', ` · read ${new Date(stats.fetched_at).toLocaleTimeString()}`),
    h('h2', {}, 'Refusals'),
    h('p', { class: 'rejection-totals' }, `429 (queue full or deadline unmeetable): ${byStatus(429)} · 504 (deadline passed in the queue): ${byStatus(504)}`),
    stats.rejections.length > 0
      ? table(['model', 'reason', 'status', 'requests'], stats.rejections.map((r) => [r.model, r.reason, r.status === null ? '?' : String(r.status), String(r.count)]), { class: 'rejections' })
      : h('p', { class: 'muted' }, 'No request has been refused.'),
    h('h2', {}, 'Model versions'),
    h('div', { class: 'cards' }, ...stats.versions.map(versionCard)),
  )
}
