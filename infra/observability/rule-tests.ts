import { DECISIONS_METRIC, DURATION_METRIC, REQUESTS_METRIC } from '../../edge/exposition/requests.ts'
import { BACKEND_METRICS } from '../../shared/backend-metrics.ts'
import { defaultConfig } from '../k8s/config.ts'
import { SHADOW_AGREEING_METRIC, SHADOW_DIFF_METRIC, SHADOW_ROWS_METRIC } from '../../edge/exposition/shadow.ts'
import { SHADOW_DIFF_BUCKETS } from '../../edge/stores/tallies/tally.ts'
import { qualityGauge } from '../../edge/exposition/quality.ts'
import { WEIGHT_METRIC } from '../../edge/exposition/requests.ts'
import { BACKEND_JOB, LATENCY_SLO, QUALITY_ALERT_MIN_LABELS, SHADOW_RECORDINGS, VARIANT_LABEL, allAlerts, type AlertRule } from './rules.ts'

/**
 * promtool unit tests (`promtool test rules`): for every alert at least one case where it fires
 * with the labels and annotations it should carry, and one near miss where it must stay quiet.
 * Series are sampled every minute.
 */
interface Series {
  series: string
  /** promtool's expanding notation: `0+10x5` is 0 10 20 30 40 50, `1x3` is 1 1 1 1. */
  values: string
}

interface Case {
  why: string
  series: Series[]
  at: string
  /** Labels of the alert (besides alertname and severity) where it fires; absent: it must not. */
  fires?: Record<string, string>
}

const BACKEND = { job: BACKEND_JOB, instance: '10.0.0.7:8000' }
const selector = (name: string, labels: Record<string, string>): string =>
  `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')}}`
const series = (name: string, labels: Record<string, string>, values: string): Series => ({ series: selector(name, labels), values })

const MODEL = { model: 'credit-risk' }
/** The labels the KEDA query selects the backend's series by (set by the ServiceMonitor's scrape). */
const KEDA_LABELS = { namespace: defaultConfig.namespace, service: defaultConfig.name }
const VERSION = { ...MODEL, version: '2' }

/** Edge latency with `slowPerMinute` of 100 requests a minute over the SLO threshold. */
const edgeLatency = (slowPerMinute: number, minutes: number, recoveredFor = 0): Series[] => {
  const labels = { ...VERSION, variant: 'stable' }
  const fastBefore = 100 - slowPerMinute
  const fast = recoveredFor === 0
    ? `0+${fastBefore}x${minutes}`
    : `0+${fastBefore}x${minutes - recoveredFor} ${fastBefore * (minutes - recoveredFor) + 100}+100x${recoveredFor - 1}`
  return [
    series(`${DURATION_METRIC}_bucket`, { ...labels, le: String(LATENCY_SLO.thresholdSeconds) }, fast),
    series(`${DURATION_METRIC}_count`, labels, `0+100x${minutes}`),
  ]
}

/** Realized accuracy of stable v2 (95% of traffic) and canary v3 (5%), sampled a minute apart, with their label counts. */
const qualityHistory = (stable: string, canary = '0.9x180', labels = '500x180'): Series[] => {
  const canaryVersion = { ...MODEL, version: '3' }
  return [
    series(qualityGauge('realized', 'accuracy'), VERSION, stable),
    series(qualityGauge('realized', 'accuracy'), canaryVersion, canary),
    series(qualityGauge('realized', 'labels'), VERSION, labels),
    series(qualityGauge('realized', 'labels'), canaryVersion, labels),
    series(WEIGHT_METRIC, { ...VERSION, arm: 'stable' }, '95x180'),
    series(WEIGHT_METRIC, { ...MODEL, version: '3', arm: 'canary' }, '5x180'),
  ]
}

export const ALERT_CASES: Record<string, Case[]> = {
  EdgeInferFeatureDrift: [
    { why: 'the backend raised the 3-window alert for one feature', at: '2m', series: [series(BACKEND_METRICS.driftAlerting, { ...BACKEND, ...VERSION, feature: 'income' }, '0 1 1')], fires: { ...VERSION, feature: 'income' } },
    { why: 'critical PSI but the 3-window rule not raised', series: [series(BACKEND_METRICS.driftAlerting, { ...BACKEND, ...VERSION, feature: 'income' }, '0 0 0'), series(BACKEND_METRICS.driftVerdict, { ...BACKEND, ...VERSION, feature: 'income' }, '2 2 2')], at: '2m' },
  ],
  EdgeInferDatasetDrift: [
    { why: 'critical for 20 min', at: '20m', series: [series(BACKEND_METRICS.driftDatasetVerdict, { ...BACKEND, ...VERSION }, '2x20')], fires: VERSION },
    { why: 'critical for 14 min only', at: '15m', series: [series(BACKEND_METRICS.driftDatasetVerdict, { ...BACKEND, ...VERSION }, '1 2x14')] },
  ],
  EdgeInferCanaryRolledBack: [
    { why: 'a rollback decision 1 min ago', at: '3m', series: [series(DECISIONS_METRIC, { ...MODEL, action: 'rollback' }, '0 0 1 1')], fires: MODEL },
    { why: 'a rollback more than 15 min ago, promotions since', at: '30m', series: [series(DECISIONS_METRIC, { ...MODEL, action: 'rollback' }, '0 1x30'), series(DECISIONS_METRIC, { ...MODEL, action: 'promote' }, '0+1x30')] },
  ],
  EdgeInferQueueNearCapacity: [
    {
      why: '85% of max_queue_size for 4 min',
      at: '4m',
      series: [series(BACKEND_METRICS.queueDepth, { ...BACKEND, ...VERSION }, '3500x4'), series(BACKEND_METRICS.queueCapacity, { ...BACKEND, ...VERSION }, '4096x4')],
      fires: { ...BACKEND, ...VERSION },
    },
    { why: '73% of max_queue_size', at: '4m', series: [series(BACKEND_METRICS.queueDepth, { ...BACKEND, ...VERSION }, '3000x4'), series(BACKEND_METRICS.queueCapacity, { ...BACKEND, ...VERSION }, '4096x4')] },
  ],
  EdgeInferBackendQueueFull: [
    {
      why: '10% of requests refused as queue_full for 10 min',
      at: '10m',
      series: [series(BACKEND_METRICS.requests, { ...BACKEND, ...VERSION, status: '200' }, '0+90x10'), series(BACKEND_METRICS.requests, { ...BACKEND, ...VERSION, status: '429' }, '0+10x10'), series(BACKEND_METRICS.rejected, { ...BACKEND, ...MODEL, reason: 'queue_full' }, '0+10x10')],
      fires: MODEL,
    },
    {
      why: '1% refused, and invalid requests (not capacity) are ignored',
      at: '10m',
      series: [series(BACKEND_METRICS.requests, { ...BACKEND, ...VERSION, status: '200' }, '0+99x10'), series(BACKEND_METRICS.rejected, { ...BACKEND, ...MODEL, reason: 'queue_full' }, '0+1x10'), series(BACKEND_METRICS.rejected, { ...BACKEND, ...MODEL, reason: 'invalid_request' }, '0+50x10')],
    },
  ],
  EdgeInferEdgeTooManyRequests: [
    {
      why: '9% of edge answers are 429 for 10 min',
      at: '10m',
      series: [series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '2xx', code: '200', served_by: 'backend' }, '0+100x10'), series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '4xx', code: '429', served_by: 'edge' }, '0+10x10')],
      fires: MODEL,
    },
    {
      why: '2% are 429, and other 4xx do not count',
      at: '10m',
      series: [series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '2xx', code: '200', served_by: 'backend' }, '0+100x10'), series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '4xx', code: '429', served_by: 'edge' }, '0+2x10'), series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '4xx', code: '400', served_by: 'edge' }, '0+30x10')],
    },
  ],
  EdgeInferLatencySLOFastBurn: [
    { why: '20% slower than the threshold for 70 min (budget 1%: 20x)', at: '70m', series: edgeLatency(20, 70), fires: MODEL },
    { why: '10% slow: a burn of 10x, below 14.4x', at: '70m', series: edgeLatency(10, 70) },
    { why: '20% slow for an hour, recovered for the last 10 min: the 5 m window ends it', at: '70m', series: edgeLatency(20, 70, 10) },
  ],
  EdgeInferLatencySLOSlowBurn: [
    { why: '8% slow for 400 min (8x, above 6x)', at: '400m', series: edgeLatency(8, 400), fires: MODEL },
    { why: '4% slow: 4x', at: '400m', series: edgeLatency(4, 400) },
  ],
  EdgeInferBackendNotReady: [
    { why: 'scraped but not ready for 10 min', at: '10m', series: [series(BACKEND_METRICS.ready, BACKEND, '0x10'), series('up', BACKEND, '1x10')], fires: BACKEND },
    { why: 'not scraped at all for 10 min', at: '10m', series: [series('up', BACKEND, '0x10')], fires: BACKEND },
    { why: 'ready after 2 min of warm-up', at: '10m', series: [series(BACKEND_METRICS.ready, BACKEND, '0 0 1x8'), series('up', BACKEND, '1x10')] },
  ],
  EdgeInferBackendTargetAbsent: [
    { why: 'no backend target for 10 min', at: '10m', series: [series('up', { job: 'some-other-job', instance: '10.0.0.9:9100' }, '1x10')], fires: { job: BACKEND_JOB } },
    { why: 'a backend target scraped, even one that is down', at: '10m', series: [series('up', BACKEND, '0x10')] },
  ],
  EdgeInferQueueDepthAbsent: [
    { why: 'targets up, no queue-depth series for 15 min', at: '15m', series: [series('up', BACKEND, '1x15')], fires: KEDA_LABELS },
    { why: 'the gauge KEDA reads is there', at: '15m', series: [series(BACKEND_METRICS.queueDepth, { ...BACKEND, ...KEDA_LABELS, ...VERSION }, '0x15')] },
  ],
  EdgeInferGpuPodOnCpu: [
    { why: 'a GPU pod on the CPU provider for 10 min', at: '10m', series: [series(BACKEND_METRICS.executionProvider, { ...BACKEND, ...VERSION, [VARIANT_LABEL]: 'gpu', provider: 'cpu' }, '1x10')], fires: { instance: BACKEND.instance, ...VERSION } },
    {
      why: 'a GPU pod on CUDA, and a CPU pod on the CPU provider',
      at: '10m',
      series: [
        series(BACKEND_METRICS.executionProvider, { ...BACKEND, ...VERSION, [VARIANT_LABEL]: 'gpu', provider: 'cuda' }, '1x10'),
        series(BACKEND_METRICS.executionProvider, { ...BACKEND, instance: '10.0.0.8:9464', ...VERSION, [VARIANT_LABEL]: 'cpu', provider: 'cpu' }, '1x10'),
      ],
    },
  ],
  EdgeInferStableQualityBelowBaseline: [
    { why: 'the stable version drops from 0.90 to 0.80 for the last hour', at: '180m', series: qualityHistory('0.9x120 0.8x60'), fires: VERSION },
    { why: 'the same drop on the canary, not the stable version', at: '180m', series: qualityHistory('0.9x180', '0.9x120 0.8x60') },
    { why: 'a drop of 0.05 only', at: '180m', series: qualityHistory('0.9x120 0.85x60') },
    { why: 'the drop on too few labels', at: '180m', series: qualityHistory('0.9x120 0.8x60', '0.9x180', `${QUALITY_ALERT_MIN_LABELS - 1}x180`) },
  ],
  EdgeInferQualityEstimateDiverged: [
    {
      why: 'realized 0.80 against an estimate of 0.95 for 70 min',
      at: '70m',
      series: [series(qualityGauge('realized', 'accuracy'), VERSION, '0.8x70'), series(qualityGauge('estimated', 'accuracy'), VERSION, '0.95x70'), series(qualityGauge('realized', 'labels'), VERSION, '500x70')],
      fires: VERSION,
    },
    { why: 'within 0.1', at: '70m', series: [series(qualityGauge('realized', 'accuracy'), VERSION, '0.86x70'), series(qualityGauge('estimated', 'accuracy'), VERSION, '0.95x70'), series(qualityGauge('realized', 'labels'), VERSION, '500x70')] },
    { why: 'diverged on too few labels', at: '70m', series: [series(qualityGauge('realized', 'accuracy'), VERSION, '0.8x70'), series(qualityGauge('estimated', 'accuracy'), VERSION, '0.95x70'), series(qualityGauge('realized', 'labels'), VERSION, '100x70')] },
  ],
  EdgeInferFallbackServing: [
    { why: 'Lambda answered 10 a minute for 10 min', at: '10m', series: [series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '2xx', code: '200', served_by: 'lambda' }, '0+10x10')], fires: MODEL },
    { why: 'only the backend served', at: '10m', series: [series(REQUESTS_METRIC, { ...VERSION, variant: 'stable', status_class: '2xx', code: '200', served_by: 'backend' }, '0+10x10')] },
  ],
}

/**
 * One shadow pair's counters over `minutes` minutes, `perMinute` of each: rows compared, agreeing
 * rows, Σ|Δp| and rows per |Δp| bucket (not cumulative; the last one beyond every bound).
 */
const shadowPair = (labels: Record<string, string>, minutes: number, perMinute: { rows: number; agreeing: number; diffSum: number; buckets: number[] }): Series[] => {
  let cumulative = 0
  const les = [...SHADOW_DIFF_BUCKETS.map(String), '+Inf']
  return [
    series(SHADOW_ROWS_METRIC, labels, `0+${perMinute.rows}x${minutes}`),
    series(SHADOW_AGREEING_METRIC, labels, `0+${perMinute.agreeing}x${minutes}`),
    series(`${SHADOW_DIFF_METRIC}_sum`, labels, `0+${perMinute.diffSum}x${minutes}`),
    series(`${SHADOW_DIFF_METRIC}_count`, labels, `0+${perMinute.rows}x${minutes}`),
    ...les.map((le, i) => {
      cumulative += perMinute.buckets[i] ?? 0
      return series(`${SHADOW_DIFF_METRIC}_bucket`, { ...labels, le }, `0+${cumulative}x${minutes}`)
    }),
  ]
}

/** A recording rule's expected samples at `at`, given `series`. */
interface RecordingCase {
  why: string
  series: Series[]
  at: string
  expect: Array<{ labels: Record<string, string>; value: number }>
}

const AGREEING_PAIR = { model: 'credit-risk', version: '1', shadow_version: '2' }
const SPLIT_PAIR = { model: 'credit-risk', version: '3', shadow_version: '2' }
/**
 * Per minute, the agreeing pair: 60 rows, 54 agreeing, Σ|Δp| 1.2; 30 rows at ≤ 0.001, 27 at
 * ≤ 0.0025, 3 in (0.05, 0.1] (rank 59.4 of 60 is 80% into that bucket: p99 0.09). The split pair:
 * 10 rows, 5 agreeing, all beyond 0.5 (p99: the highest finite bound).
 */
const SHADOW_SERIES = [
  ...shadowPair(AGREEING_PAIR, 10, { rows: 60, agreeing: 54, diffSum: 1.2, buckets: [30, 27, 0, 0, 0, 0, 3] }),
  ...shadowPair(SPLIT_PAIR, 10, { rows: 10, agreeing: 5, diffSum: 7, buckets: [0, 0, 0, 0, 0, 0, 0, 0, 0, 10] }),
]

export const RECORDING_CASES: Record<string, RecordingCase[]> = {
  [SHADOW_RECORDINGS.agreement]: [{ why: 'per served version', at: '10m', series: SHADOW_SERIES, expect: [{ labels: AGREEING_PAIR, value: 0.9 }, { labels: SPLIT_PAIR, value: 0.5 }] }],
  [SHADOW_RECORDINGS.meanDiff]: [{ why: 'Σ|Δp| over rows', at: '10m', series: SHADOW_SERIES, expect: [{ labels: AGREEING_PAIR, value: 0.02 }, { labels: SPLIT_PAIR, value: 0.7 }] }],
  [SHADOW_RECORDINGS.p99Diff]: [{ why: 'interpolated in its bucket', at: '10m', series: SHADOW_SERIES, expect: [{ labels: AGREEING_PAIR, value: 0.09 }, { labels: SPLIT_PAIR, value: 0.5 }] }],
}

/** `{{ $labels.x }}` replaced as Prometheus' template engine would (the only form the rules use). */
export const expandTemplate = (template: string, labels: Record<string, string>): string =>
  template.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, name: string) => labels[name] ?? '')

const expected = (a: AlertRule, labels: Record<string, string>) => ({
  exp_labels: { ...labels, severity: a.severity },
  exp_annotations: { summary: expandTemplate(a.summary, labels), runbook: expandTemplate(a.runbook, labels) },
})

/** The promtool test file, next to `rules.yaml`. */
export const ruleTests = (ruleFile: string) => ({
  rule_files: [ruleFile],
  evaluation_interval: '1m',
  tests: [
    ...allAlerts().flatMap((a) =>
    (ALERT_CASES[a.alert] ?? []).map((c) => ({
      name: `${a.alert}: ${c.why}`,
      interval: '1m',
      input_series: c.series,
      alert_rule_test: [{ eval_time: c.at, alertname: a.alert, exp_alerts: c.fires ? [expected(a, c.fires)] : [] }],
    })),
    ),
    ...Object.entries(RECORDING_CASES).flatMap(([record, cases]) => cases.map((c) => ({
      name: `${record}: ${c.why}`,
      interval: '1m',
      input_series: c.series,
      // promtool 2.42 compares floats exactly: each sample is checked within 1e-9 of its value instead.
      promql_expr_test: c.expect.map((e) => ({ expr: `abs(${selector(record, e.labels)} - ${e.value}) < bool 1e-9`, eval_time: c.at, exp_samples: [{ labels: selector('', e.labels), value: 1 }] })),
    }))),
  ],
})
