import { histogramChart, type Series } from '../charts.ts'
import { fixed, h, ms, percent } from '../dom.ts'
import type { DriftReport } from '../api.ts'
import { DRIFT_WINDOWS, MAIN_WINDOW, type Snapshot, type VersionDrift } from '../snapshot.ts'

type Feature = DriftReport['features'][number]

/** What a cell says on hover: the statistics behind its verdict. */
const statistic = (f: Feature, window: string): string => [
  `${f.name} · ${window}: ${f.verdict}`,
  `PSI ${fixed(f.psi)} (warning ${fixed(f.thresholds.warning)}, critical ${fixed(f.thresholds.critical)})`,
  `JS distance ${fixed(f.js_distance)}`,
  f.ks ? `KS D ${fixed(f.ks.d)} (p ${fixed(f.ks.p_value, 4)})` : undefined,
  `χ² ${fixed(f.chi_square.statistic, 1)}, df ${f.chi_square.df} (p ${fixed(f.chi_square.p_value, 4)})`,
  `missing ${percent(f.missing_rate.observed)} (baseline ${percent(f.missing_rate.reference)})`,
  `rows ${f.rows} · consecutive critical ${f.consecutive_critical}${f.alerting ? ' · ALERTING' : ''}`,
].filter(Boolean).join('\n')

/** Features down, windows across; each cell coloured by its verdict, the statistics on hover. */
const heatmap = (drift: VersionDrift, detail: HTMLElement): HTMLElement => {
  const reports = drift.windows.filter((w): w is DriftReport => typeof w !== 'string')
  const features = reports[0]?.features.map((f) => f.name) ?? []
  const head = h('tr', {}, h('th', {}, 'feature'), ...DRIFT_WINDOWS.map((w) => h('th', { attrs: { scope: 'col' } }, w.label)))
  const rows = features.map((name) => h('tr', {}, h('th', { attrs: { scope: 'row' } }, name), ...drift.windows.map((report, i) => {
    if (typeof report === 'string') return h('td', { class: 'cell unavailable', title: report, attrs: { 'data-verdict': 'unavailable' } }, '?')
    const f = report.features.find((x) => x.name === name)!
    const text = statistic(f, DRIFT_WINDOWS[i].label)
    const cell = h('td', { class: `cell ${f.verdict}`, title: text, attrs: { 'data-verdict': f.verdict, 'data-feature': name, 'data-window': DRIFT_WINDOWS[i].query, tabindex: '0' } }, fixed(f.psi, 2))
    const show = () => { detail.textContent = text }
    cell.addEventListener('mouseenter', show)
    cell.addEventListener('focus', show)
    return cell
  })))
  return h('table', { class: 'heatmap', attrs: { 'data-version': String(drift.version) } }, h('thead', {}, head), h('tbody', {}, ...rows))
}

const mainReport = (drift: VersionDrift): DriftReport | string => drift.windows[DRIFT_WINDOWS.findIndex((w) => w.query === MAIN_WINDOW)]

const summary = (drift: VersionDrift): HTMLElement => {
  const report = mainReport(drift)
  if (typeof report === 'string') return h('p', { class: 'error' }, report)
  const { health, dataset } = report
  return h('div', { class: 'summary' },
    h('p', {}, h('strong', {}, 'Dataset verdict: '), h('span', { class: `verdict ${dataset.verdict}`, attrs: { 'data-verdict': dataset.verdict } }, dataset.verdict),
      dataset.critical_features.length > 0 ? ` (critical: ${dataset.critical_features.join(', ')})` : '', dataset.alerting ? ' · ALERTING' : '', ` · ${report.rows} rows in the last ${report.window.minutes} min`),
    h('p', { class: 'health' }, h('strong', {}, 'Health: '), `${health.requests} requests · ${health.errors} errors (${percent(health.error_rate, 2)}) · p50 ${ms(health.p50_ms)} · p95 ${ms(health.p95_ms)}`),
    h('p', {}, h('strong', {}, 'Predictions against the baseline: '), `PSI ${fixed(report.prediction.psi)} (warning ${fixed(report.prediction.thresholds.warning)}, critical ${fixed(report.prediction.thresholds.critical)}) · ${report.prediction.verdict} · NaN/Inf outputs ${report.prediction.nan_outputs}`),
  )
}

/** Each arm's predictions as shares of its rows, so arms of different weights compare. */
const predictionHistogram = (snapshot: Snapshot, target: HTMLElement) => {
  const { rollout } = snapshot.selected.state
  const series: Series[] = []
  for (const drift of snapshot.drift) {
    const report = mainReport(drift)
    if (typeof report === 'string') continue
    const total = report.prediction.counts.reduce((a, b) => a + b, 0)
    const isCanary = rollout.arms.some((a) => a.version === drift.version && a.variant === rollout.canary?.variant)
    series.push({ label: `v${drift.version} (${drift.arms.join(', ')})`, values: report.prediction.counts.map((c) => (total === 0 ? 0 : c / total)), color: isCanary ? 'canary' : series.length === 0 ? 'stable' : 'other' })
  }
  if (series.length === 0) return
  const bins = series[0].values.length
  // Each bin is drawn from its start to the next one's; the last one ends at 1.
  const edges = Array.from({ length: bins + 1 }, (_, i) => i / bins)
  histogramChart(target, edges, series.map((s) => ({ ...s, values: [...s.values, s.values[bins - 1]] })), { x: 'predicted probability', y: 'share of rows' }, (v) => v.toFixed(2))
}

/** Per arm version: the heatmap, the dataset verdict and health; the arms' prediction histograms together. */
export const driftView = (snapshot: Snapshot): HTMLElement => {
  const detail = h('pre', { class: 'hover-detail', attrs: { 'aria-live': 'polite' } }, 'Hover a cell for its statistics.')
  const histogram = h('div', { class: 'chart prediction-chart' })
  const view = h('div', {},
    h('h2', {}, `Predictions, last ${MAIN_WINDOW}: canary against stable`),
    histogram,
    h('p', { class: 'muted' }, "Each arm's histogram is a share of its own rows. The backend's drift report gives each version's PSI against its baseline (below), not the baseline's histogram."),
    detail,
    ...snapshot.drift.map((drift) => h('section', { class: 'version-drift', attrs: { 'data-version': String(drift.version) } },
      h('h2', {}, `v${drift.version} — ${drift.arms.join(', ')}`),
      summary(drift),
      heatmap(drift, detail),
    )),
  )
  predictionHistogram(snapshot, histogram)
  return view
}
