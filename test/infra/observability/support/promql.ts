const NOT_METRICS = new Set([
  'sum', 'max', 'min', 'count', 'avg', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset',
  'rate', 'increase', 'histogram_quantile', 'clamp_min', 'clamp_max', 'label_values', 'vector', 'absent', 'time', 'abs', 'avg_over_time',
])

/**
 * Metric and recording-rule names a PromQL expression reads: identifiers outside strings,
 * label matchers and grouping clauses that are not PromQL's own words (enough for the project's
 * queries, which the live-Prometheus test runs for real).
 */
export const metricNames = (expr: string): string[] => {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '')
  const names = [...bare.matchAll(/(?<![\w:.$])[a-zA-Z_:][\w:]*/g)].map((m) => m[0]).filter((n) => !NOT_METRICS.has(n))
  return [...new Set(names)]
}

export interface PanelQuery {
  panel: string
  refId: string
  expr: string
  /** Grafana's series name template: `{{label}}` must be a label of the result. */
  legend: string
}

/** The fields of the committed dashboard JSON the tests read. */
export interface DashboardView {
  templating: { list: Array<{ name: string; type: string; query?: unknown }> }
  panels: PanelView[]
}
export interface PanelView {
  type: string
  title: string
  datasource?: { type?: string; uid?: string }
  panels?: PanelView[]
  targets?: Array<{ refId: string; expr: string; legendFormat?: string; datasource?: { uid?: string } }>
  fieldConfig?: { defaults?: { thresholds?: { steps: Array<{ value: number | null }> } } }
}

/** The dashboard's panels, rows' nested panels included, rows themselves left out. */
export const leafPanels = (d: DashboardView): PanelView[] => d.panels.flatMap((p) => (p.type === 'row' ? (p.panels ?? []) : [p]))

/** Every query of every panel. */
export const panelQueries = (d: DashboardView): PanelQuery[] =>
  leafPanels(d).flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, refId: t.refId, expr: t.expr, legend: t.legendFormat ?? '' })))

/** What Grafana sends for the dashboard's variables with "All" selected and a 1 s scrape. */
export const substituteVariables = (expr: string): string => expr.replaceAll('$model', '.*').replaceAll('$__rate_interval', '1m')

/** The labels a legend template names. */
export const legendLabels = (legend: string): string[] => [...legend.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]!)
