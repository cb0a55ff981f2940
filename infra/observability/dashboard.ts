import * as common from '@grafana/grafana-foundation-sdk/common'
import { DashboardBuilder, DatasourceVariableBuilder, MappingType, QueryVariableBuilder, RowBuilder, ThresholdsConfigBuilder, ThresholdsMode, type Dashboard } from '@grafana/grafana-foundation-sdk/dashboard'
import { PanelBuilder as HeatmapPanel } from '@grafana/grafana-foundation-sdk/heatmap'
import { DataqueryBuilder, PromQueryFormat } from '@grafana/grafana-foundation-sdk/prometheus'
import { PanelBuilder as StateTimelinePanel } from '@grafana/grafana-foundation-sdk/statetimeline'
import { PanelBuilder as TimeseriesPanel } from '@grafana/grafana-foundation-sdk/timeseries'
import { NORMALIZED_METRIC } from '../../edge/exposition/normalization.ts'
import { DECISIONS_METRIC, DURATION_METRIC, REQUESTS_METRIC, WEIGHT_METRIC } from '../../edge/exposition/requests.ts'
import { BACKEND_METRICS as BACKEND } from '../../shared/backend-metrics.ts'
import { queueDepthQuery } from '../k8s/autoscaling.ts'
import { defaultConfig, type ClusterConfig } from '../k8s/config.ts'
import { TARGET_ROWS_PER_REPLICA } from '../k8s/sizing.ts'
import { LATENCY_SLO, QUEUE_FILL, QUEUE_FILL_WARNING, SHADOW_RECORDINGS, sloErrorRatio } from './rules.ts'

export const DATASOURCE_VARIABLE = 'datasource'
const datasource = { type: 'prometheus', uid: `\${${DATASOURCE_VARIABLE}}` }
/** Every panel filters on the model variable (all models: `.*`). */
const MODEL = 'model=~"$model"'

const query = (expr: string, legend: string, refId: string) =>
  new DataqueryBuilder().datasource(datasource).expr(expr).legendFormat(legend).refId(refId).range()

const refIds = 'ABCDEFGH'
const timeseries = (title: string, unit: string, queries: Array<[expr: string, legend: string]>) =>
  new TimeseriesPanel()
    .title(title)
    .datasource(datasource)
    .unit(unit)
    .span(12)
    .height(8)
    .targets(queries.map(([expr, legend], i) => query(expr, legend, refIds[i]!)))

const threshold = (value: number) =>
  new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps([{ value: null, color: 'green' }, { value, color: 'red' }])
const withLine = <P extends TimeseriesPanel>(panel: P, value: number): P =>
  panel.thresholds(threshold(value)).thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Dashed))

const rate = (selector: string) => `rate(${selector}[$__rate_interval])`
const edgeRequests = (matchers = '') => `${REQUESTS_METRIC}{${[MODEL, matchers].filter(Boolean).join(',')}}`
const perVariant = (matchers = '') => `sum by (variant, version) (${rate(edgeRequests(matchers))})`
const quantiles = (histogram: string, by: string, legend: string): Array<[string, string]> =>
  [0.5, 0.99].map((q) => [`histogram_quantile(${q}, sum by (le, ${by}) (${rate(`${histogram}_bucket{${MODEL}}`)}))`, `p${q * 100} ${legend}`])

/** The verdicts' gauge values (backend/monitor/metrics.ts) as words and colours. */
const VERDICTS: Array<[value: number, text: string, color: string]> = [[-1, 'insufficient', 'text'], [0, 'ok', 'green'], [1, 'warning', 'orange'], [2, 'critical', 'red']]

const edgePanels = () => [
  timeseries('Request rate per variant', 'reqps', [[perVariant(), '{{variant}} v{{version}}']]),
  timeseries('Errors per variant', 'percentunit', [
    // 0 instead of no data while nothing failed.
    [`(${perVariant('status_class="5xx"')} or ${perVariant()} * 0) / ${perVariant()}`, '5xx ratio {{variant}} v{{version}}'],
  ]),
  timeseries('Non-2xx answers by code', 'reqps', [[`sum by (code, variant) (${rate(edgeRequests('status_class!="2xx"'))})`, '{{code}} {{variant}}']]),
  timeseries('p50 / p99 per variant (edge)', 's', quantiles(DURATION_METRIC, 'variant, version', '{{variant}} v{{version}}')),
  timeseries('Served by tier', 'reqps', [[`sum by (served_by) (${rate(edgeRequests())})`, '{{served_by}}']]),
  // Per API key, all models: a client with an encoding bug shows here.
  timeseries('Inputs the edge had to fix, per API key', 'reqps', [[`sum by (key) (${rate(NORMALIZED_METRIC)})`, '{{key}}']]),
  timeseries(`Latency SLO burn rate (${LATENCY_SLO.objective * 100}% within ${LATENCY_SLO.thresholdSeconds * 1000} ms)`, 'x', (['5m', '1h', '6h'] as const).map((w) => [
    `${sloErrorRatio(w)}{${MODEL}} / ${Number((1 - LATENCY_SLO.objective).toPrecision(6))}`, `${w} {{model}}`,
  ])),
]

const backendPanels = (c: ClusterConfig) => {
  const pods = `up{namespace="${c.namespace}",service="${c.name}"}`
  return [
    timeseries('Backend p50 / p99: request, queue, compute', 's', [
      ...quantiles(BACKEND.requestDuration, 'version', 'request v{{version}}'),
      ...quantiles(BACKEND.queueDuration, 'version', 'queue v{{version}}'),
      ...quantiles(BACKEND.computeDuration, 'version', 'compute v{{version}}'),
    ]),
    new HeatmapPanel()
      .title('Batch size distribution')
      .datasource(datasource)
      .span(12)
      .height(8)
      .calculate(false)
      .withTarget(query(`sum by (le) (increase(${BACKEND.batchSize}_bucket{${MODEL}}[$__rate_interval]))`, '{{le}}', 'A').format(PromQueryFormat.Heatmap)),
    timeseries('Batches by reason', 'ops', [[`sum by (reason) (${rate(`${BACKEND.batches}{${MODEL}}`)})`, '{{reason}}']]),
    withLine(timeseries(`Queue depth per replica vs KEDA target (${TARGET_ROWS_PER_REPLICA} rows)`, 'short', [
      // The ScaledObject's own query over the replicas it divides by.
      [`${queueDepthQuery(c)} / clamp_min(count(${pods} == 1), 1)`, 'rows per replica'],
    ]), TARGET_ROWS_PER_REPLICA),
    withLine(timeseries('Queue fill (depth / max_queue_size)', 'percentunit', [[`max by (model, version) (${QUEUE_FILL}{${MODEL}})`, '{{model}} v{{version}}']]), QUEUE_FILL_WARNING),
    timeseries('Replicas', 'short', [
      [`count(${pods} == 1)`, 'scraped and up'],
      [`sum(kube_deployment_status_replicas_available{namespace="${c.namespace}",deployment="${c.name}"})`, 'available (kube-state-metrics)'],
      [`max(kube_horizontalpodautoscaler_status_desired_replicas{namespace="${c.namespace}",horizontalpodautoscaler="${c.name}"})`, 'desired by the autoscaler'],
    ]),
    timeseries('Rejections', 'reqps', [
      [`sum by (reason) (${rate(`${BACKEND.rejected}{${MODEL}}`)})`, 'backend {{reason}}'],
      [`sum (${rate(edgeRequests('code="429"'))})`, 'edge 429'],
    ]),
  ]
}

const driftPanels = () => [
  new StateTimelinePanel()
    .title('Drift verdict per feature')
    .datasource(datasource)
    .span(24)
    .height(10)
    .mappings([{ type: MappingType.ValueToText, options: Object.fromEntries(VERDICTS.map(([value, text, color], index) => [String(value), { text, color, index }])) }])
    .withTarget(query(`max by (version, feature) (${BACKEND.driftVerdict}{${MODEL}})`, 'v{{version}} {{feature}}', 'A')),
  timeseries('PSI per feature', 'short', [[`max by (version, feature) (${BACKEND.driftPsi}{${MODEL}})`, 'v{{version}} {{feature}}']]),
  timeseries('Rollout weights', 'percent', [[`max by (version, arm) (${WEIGHT_METRIC}{${MODEL}})`, '{{arm}} v{{version}}']])
    .stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal))
    .min(0)
    .max(100),
  timeseries('Rollout decisions', 'short', [[`sum by (action) (increase(${DECISIONS_METRIC}{${MODEL}}[$__rate_interval]))`, '{{action}}']])
    .drawStyle(common.GraphDrawStyle.Bars),
  // The shadow against what clients were served, from the recording rules (5 min windows).
  timeseries('Shadow label agreement', 'percentunit', [[`${SHADOW_RECORDINGS.agreement}{${MODEL}}`, 'shadow v{{shadow_version}} vs v{{version}}']]).min(0).max(1),
  timeseries('Shadow |Δp| mean and p99', 'short', [
    [`${SHADOW_RECORDINGS.meanDiff}{${MODEL}}`, 'mean shadow v{{shadow_version}} vs v{{version}}'],
    [`${SHADOW_RECORDINGS.p99Diff}{${MODEL}}`, 'p99 shadow v{{shadow_version}} vs v{{version}}'],
  ]),
]

const rows = (c: ClusterConfig): Array<[title: string, panels: Array<TimeseriesPanel | HeatmapPanel | StateTimelinePanel>]> => [
  ['Edge: traffic, errors and latency per variant', edgePanels()],
  ['Backend: latency, batching, queue and replicas', backendPanels(c)],
  ['Drift and rollout', driftPanels()],
]

export const dashboard = (c: ClusterConfig = defaultConfig): Dashboard => {
  const builder = new DashboardBuilder('edge-infer')
    .uid('edge-infer')
    .tags(['edge-infer'])
    .refresh('30s')
    .time({ from: 'now-3h', to: 'now' })
    .timezone('browser')
    .withVariable(new DatasourceVariableBuilder(DATASOURCE_VARIABLE).label('Prometheus').type('prometheus'))
    .withVariable(
      new QueryVariableBuilder('model')
        .label('Model')
        .datasource(datasource)
        .query(`label_values(${BACKEND.queueDepth}, model)`)
        .multi(true)
        .includeAll(true)
        .allValue('.*'),
    )
  for (const [title, panels] of rows(c)) {
    builder.withRow(new RowBuilder(title))
    for (const panel of panels) builder.withPanel(panel)
  }
  return builder.build()
}
