import { histogramChart, type Series } from '../charts.ts'
import { fixed, h, ms, percent, table } from '../dom.ts'
import type { DriftReport } from '../api.ts'
import { DRIFT_WINDOWS, type DriftWindowLength, type Snapshot, type VersionDrift } from '../snapshot.ts'
import type { ActionContext } from './actions.ts'
import { MIN_WINDOW_ROWS } from '../../../shared/drift/window-rows.ts'

type Feature = DriftReport['features'][number]
type Window = Feature['windows'][number]
/** A heatmap row: a feature, or the predictions (named as the backend's metrics name them). */
type Row = { name: string; thresholds: Feature['thresholds']; windows: Window[]; current: string[] }

const PREDICTION = '__prediction__'
const MINUTE_MS = 60_000

/** HH:MM in the operator's time zone, the same in every locale. */
const clock = (minute: number) => {
  const at = new Date(minute * MINUTE_MS)
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`
}
/** A window's minutes as clock times; `to_minute` is inclusive, so it ends a minute later. */
const span = (w: Window) => `${clock(w.from_minute)}–${clock(w.to_minute + 1)}`
/** How long before the current window this one ended: "now" for the current one. */
const ago = (w: Window, current: Window) => (w.to_minute === current.to_minute ? 'now' : `−${current.to_minute - w.to_minute} min`)

/** The current window's statistics beyond PSI, which the report gives for it alone. */
const featureDetail = (f: Feature): string[] => [
  `JS distance ${fixed(f.js_distance)}`,
  f.ks ? `KS D ${fixed(f.ks.d)} (p ${fixed(f.ks.p_value, 4)})` : '',
  `χ² ${fixed(f.chi_square.statistic, 1)}, df ${f.chi_square.df} (p ${fixed(f.chi_square.p_value, 4)})`,
  `missing ${percent(f.missing_rate.observed)} (baseline ${percent(f.missing_rate.reference)})`,
  `consecutive critical ${f.consecutive_critical}${f.alerting ? ' · ALERTING' : ''}`,
].filter(Boolean)

const rowsOf = (report: DriftReport): Row[] => [
  ...report.features.map((f) => ({ name: f.name, thresholds: f.thresholds, windows: f.windows, current: featureDetail(f) })),
  {
    name: PREDICTION,
    thresholds: report.prediction.thresholds,
    windows: report.prediction.windows,
    current: [`JS distance ${fixed(report.prediction.js_distance)}`, `NaN/Inf outputs ${report.prediction.nan_outputs}`, `consecutive critical ${report.prediction.consecutive_critical}${report.prediction.alerting ? ' · ALERTING' : ''}`],
  },
]

/** The mark each verdict's cells carry beside their colour (insufficient ones say their row count). */
const MARKS: Readonly<Record<Window['verdict'], string>> = { ok: '✓', warning: '▲', critical: '✖', insufficient: '' }

const count = (n: number) => n.toLocaleString('en-US')

/** A window too small for a verdict: how many rows it has of those it needs. */
const shortOf = (w: Window) => `${count(w.rows)} of ${count(MIN_WINDOW_ROWS)} rows`

/** What a cell says on hover: its window's PSI, rows and verdict; the current one says more. */
const statistic = (row: Row, w: Window, current: Window): string => [
  `${row.name} · ${span(w)} (${ago(w, current)}): ${w.verdict}`,
  w.verdict === 'insufficient'
    ? `not judged: ${shortOf(w)} (PSI ${fixed(w.psi)} of so few rows is noise)`
    : `PSI ${fixed(w.psi)} (warning ${fixed(row.thresholds.warning)}, critical ${fixed(row.thresholds.critical)})`,
  `rows ${w.rows}`,
  ...(w === row.windows[row.windows.length - 1] ? row.current : []),
].join('\n')

/** Puts the detail box just below `cell` (above it when there is no room below), inside the viewport. */
const placeBeside = (detail: HTMLElement, cell: HTMLElement) => {
  const at = cell.getBoundingClientRect()
  detail.dataset.placed = 'true'
  const box = detail.getBoundingClientRect()
  const left = Math.max(8, Math.min(at.left, document.documentElement.clientWidth - box.width - 8))
  const below = at.bottom + 4 + box.height <= window.innerHeight
  detail.style.left = `${left + window.scrollX}px`
  detail.style.top = `${(below ? at.bottom + 4 : Math.max(8, at.top - box.height - 4)) + window.scrollY}px`
}

/** Features (and the predictions) down, the report's consecutive windows across, oldest first; each cell coloured by its verdict. */
const heatmap = (version: number, report: DriftReport, detail: HTMLElement): HTMLElement => {
  const spans = report.prediction.windows
  const current = spans[spans.length - 1]
  const head = h('tr', {}, h('th', {}, 'feature'), ...spans.map((w) => h('th', { attrs: { scope: 'col' }, title: `${w.from_minute}–${w.to_minute} (minutes since the epoch)` }, ago(w, current), h('br'), h('small', {}, span(w)))))
  const rows = rowsOf(report).map((row) => h('tr', { class: row.name === PREDICTION ? 'prediction-row' : '' }, h('th', { attrs: { scope: 'row' } }, row.name === PREDICTION ? 'predictions' : row.name), ...row.windows.map((w, i) => {
    const text = statistic(row, w, current)
    // A window too small for a verdict shows its row count, not a statistic nobody should read.
    const shown = w.rows === 0 ? '·' : w.verdict === 'insufficient' ? h('span', { class: 'rows-short' }, shortOf(w)) : fixed(w.psi, 2)
    // Not by colour alone: a mark for the eye, the verdict's word for a screen reader.
    const mark = MARKS[w.verdict]
    const cell = h('td', { class: `cell ${w.verdict}`, title: text, attrs: { 'data-verdict': w.verdict, 'data-feature': row.name, 'data-window': String(i), 'data-from-minute': String(w.from_minute), tabindex: '0' } },
      mark ? h('span', { class: 'mark', attrs: { 'aria-hidden': 'true' } }, mark) : null, h('span', { class: 'sr-only' }, `${w.verdict}: `), shown)
    const show = () => {
      detail.textContent = text
      placeBeside(detail, cell)
    }
    cell.addEventListener('mouseenter', show)
    cell.addEventListener('focus', show)
    return cell
  })))
  return h('table', { class: 'heatmap', attrs: { 'data-version': String(version), 'data-window-minutes': String(report.window.minutes) } }, h('thead', {}, head), h('tbody', {}, ...rows))
}

/**
 * The current window's statistics per feature (and the predictions' logit) side by side: PSI,
 * the location gate's SMD and z, the shape gate's Wasserstein-1 over the baseline's sd, and a
 * categorical feature's total variation distance; "–" where the statistic does not apply.
 */
const effectSizes = (version: number, report: DriftReport): HTMLElement => {
  const rows = rowsOf(report).map((row) => {
    const w = row.windows[row.windows.length - 1]
    const judged = w && w.verdict !== 'insufficient'
    const value = (v: number | null | undefined, digits = 3) => (judged ? fixed(v, digits) : '–')
    return [
      row.name === PREDICTION ? 'predictions (logit)' : row.name,
      w ? (judged ? count(w.rows) : shortOf(w)) : '–',
      value(w?.psi), value(w?.smd), value(w?.z, 2), value(w?.wasserstein), value(w?.tvd),
      h('span', { class: `row-verdict ${w?.verdict ?? 'unavailable'}` }, w?.verdict ?? '–'),
    ]
  })
  const estimate = report.prediction.estimated_quality
  return h('div', { class: 'effect-sizes-block' },
    table(['current window', 'rows', 'PSI', 'SMD', 'z', 'Wasserstein-1 / sd', 'TVD', 'verdict'], rows, { class: 'effect-sizes', attrs: { 'data-version': String(version) } }),
    h('p', { class: 'estimated-quality' }, h('strong', {}, 'Estimated quality (label-free, CBPE): '),
      estimate ? `accuracy ${fixed(estimate.accuracy)} · ROC AUC ${fixed(estimate.roc_auc)} · log loss ${fixed(estimate.log_loss)} · ECE ${fixed(estimate.ece)} over ${count(estimate.labels)} predicted rows` : 'not in this report'),
  )
}

const summary = (report: DriftReport): HTMLElement => {
  const { health, dataset } = report
  return h('div', { class: 'summary' },
    h('p', {}, h('strong', {}, 'Dataset verdict: '), h('span', { class: `verdict ${dataset.verdict}`, attrs: { 'data-verdict': dataset.verdict } }, dataset.verdict),
      dataset.critical_features.length > 0 ? ` (critical: ${dataset.critical_features.join(', ')})` : '', dataset.alerting ? ' · ALERTING' : '', ` · ${report.rows} rows in the last ${report.window.minutes} min`),
    h('p', { class: 'health' }, h('strong', {}, 'Health: '), `${health.requests} requests · ${health.errors} errors (${percent(health.error_rate, 2)}) · p50 ${ms(health.p50_ms)} · p95 ${ms(health.p95_ms)}`),
    h('p', {}, h('strong', {}, 'Predictions against the baseline: '), `PSI ${fixed(report.prediction.psi)} (warning ${fixed(report.prediction.thresholds.warning)}, critical ${fixed(report.prediction.thresholds.critical)}) · ${report.prediction.verdict} · NaN/Inf outputs ${report.prediction.nan_outputs}`),
  )
}

const shares = (counts: readonly number[]): number[] => {
  const total = counts.reduce((a, b) => a + b, 0)
  return counts.map((c) => (total === 0 ? 0 : c / total))
}

/**
 * Each arm's predictions in the current window, and the baselines they are measured against, as
 * shares of their own rows so arms of different weights compare. Versions with the same baseline
 * histogram share one baseline line.
 */
const predictionHistogram = (snapshot: Snapshot, target: HTMLElement) => {
  const { rollout } = snapshot.selected.state
  const arms: Series[] = []
  const baselines = new Map<string, { versions: number[]; values: number[] }>()
  for (const drift of snapshot.drift) {
    const { report } = drift
    if (typeof report === 'string') continue
    const isCanary = rollout.arms.some((a) => a.version === drift.version && a.variant === rollout.canary?.variant)
    arms.push({ label: `v${drift.version} (${drift.arms.join(', ')})`, values: shares(report.prediction.counts), color: isCanary ? 'canary' : arms.length === 0 ? 'stable' : 'other' })
    const values = shares(report.prediction.baseline_counts)
    const same = baselines.get(values.join())
    if (same) same.versions.push(drift.version)
    else baselines.set(values.join(), { versions: [drift.version], values })
  }
  const series = [...arms, ...[...baselines.values()].map((b): Series => ({ label: `baseline (${b.versions.map((v) => `v${v}`).join(', ')})`, values: b.values, color: 'baseline', dash: [6, 4] }))]
  if (series.length === 0) return
  const bins = series[0].values.length
  // Each bin is drawn from its start to the next one's; the last one ends at 1.
  const edges = Array.from({ length: bins + 1 }, (_, i) => i / bins)
  histogramChart(target, edges, series.map((s) => ({ ...s, values: [...s.values, s.values[bins - 1]] })), { x: 'predicted probability', y: 'share of rows' }, (v) => v.toFixed(2))
}

const windowPicker = (selected: DriftWindowLength, ctx: ActionContext): HTMLElement => {
  const select = h('select', { attrs: { id: 'drift-window', 'aria-label': 'drift window length' } }, ...DRIFT_WINDOWS.map((w) => new Option(w.label, w.query, false, w.query === selected)))
  select.addEventListener('change', () => ctx.showDriftWindows(select.value as DriftWindowLength))
  return h('p', { class: 'drift-window' }, h('label', { attrs: { for: 'drift-window' } }, 'Windows: '), select)
}

const versionSection = (drift: VersionDrift, detail: HTMLElement): HTMLElement =>
  h('section', { class: 'version-drift', attrs: { 'data-version': String(drift.version) } },
    h('h2', {}, `v${drift.version} — ${drift.arms.join(', ')}`),
    ...(typeof drift.report === 'string' ? [h('p', { class: 'error' }, drift.report)] : [summary(drift.report), heatmap(drift.version, drift.report, detail), effectSizes(drift.version, drift.report)]),
  )

/**
 * Per version, realized quality (feedback labels of the predictions served in the window) beside
 * the label-free estimate, over the last hour to the last week: whether quality moved, and
 * whether the estimate still tracks what the labels say.
 */
const qualitySection = (quality: Snapshot['quality']): HTMLElement => {
  if (typeof quality === 'string') return h('p', { class: 'quality error' }, `Quality could not be read: ${quality}`)
  const versions = [...new Set(quality.flatMap((q) => q.versions.map((v) => v.version)))].sort((a, b) => a - b)
  const figure = (f: { accuracy: number | null; log_loss: number | null; labels: number } | null) =>
    f === null || f.labels === 0 ? '–' : `acc ${fixed(f.accuracy)} · log loss ${fixed(f.log_loss)} (${count(f.labels)})`
  const rows = versions.flatMap((version) => (['realized', 'estimated'] as const).map((kind) => [
    kind === 'realized' ? `v${version}` : '', kind,
    ...quality.map((q) => figure(q.versions.find((v) => v.version === version)?.[kind] ?? null)),
  ]))
  return h('div', { class: 'quality' },
    table(['version', '', ...quality.map((q) => `last ${q.window}`)], rows, { class: 'quality-table' }),
    h('p', { class: 'muted' }, 'Realized: feedback labels of the predictions served in the window (however late they came), with the label count. Estimated: CBPE from the prediction bins and the baseline\'s calibration, with the predicted rows; the backend keeps at most 3 h, so longer windows may have none.'),
  )
}

/** Per arm version: the dataset verdict, health and the heatmap over time; the arms' prediction histograms with their baselines together. */
export const driftView = (snapshot: Snapshot, ctx: ActionContext): HTMLElement => {
  const detail = h('pre', { class: 'hover-detail', attrs: { 'aria-live': 'polite', 'data-placed': 'false' } }, 'Hover a cell (or focus it) for its statistics.')
  const histogram = h('div', { class: 'chart prediction-chart' })
  const minutes = snapshot.drift.map((d) => d.report).find((r): r is DriftReport => typeof r !== 'string')?.window.minutes
  const view = h('div', {},
    windowPicker(snapshot.driftWindow, ctx),
    h('h2', {}, 'Quality per version over time: realized and estimated'),
    qualitySection(snapshot.quality),
    h('h2', {}, `Predictions${minutes ? `, last ${minutes} min` : ''}: canary against stable against the baseline`),
    histogram,
    h('p', { class: 'muted' }, "Each histogram is a share of its own rows; the dashed line is the baseline's (from the version's baseline.json), against which each version's prediction PSI is measured."),
    detail,
    ...snapshot.drift.map((drift) => versionSection(drift, detail)),
  )
  predictionHistogram(snapshot, histogram)
  return view
}
