import { DECISIONS_METRIC, DURATION_METRIC, REQUESTS_METRIC } from '../../edge/exposition/requests.ts'
import { SHADOW_AGREEING_METRIC, SHADOW_DIFF_METRIC, SHADOW_ROWS_METRIC } from '../../edge/exposition/shadow.ts'
import { BACKEND_METRICS as BACKEND } from '../../shared/backend-metrics.ts'
import { qualityGauge } from '../../edge/exposition/quality.ts'
import { WEIGHT_METRIC } from '../../edge/exposition/requests.ts'
import { defaultConfig } from '../k8s/config.ts'

/**
 * The SLO the burn-rate alerts defend: 99% of the client-facing requests the edge answers
 * (shadow copies excluded: no client waits for them) complete within 250 ms, per model. 250 ms is
 * a bucket boundary of the edge's latency histogram, so the bad-event ratio is exact.
 */
export const LATENCY_SLO = { objective: 0.99, thresholdSeconds: 0.25 } as const
const ERROR_BUDGET = 1 - LATENCY_SLO.objective
/** The windows the SLO's error ratio is recorded over (Google SRE workbook, multiwindow multi-burn-rate). */
export const SLO_WINDOWS = ['5m', '30m', '1h', '6h'] as const
type SloWindow = (typeof SLO_WINDOWS)[number]

/** Share of the queue bound (`max_queue_size`) at which refusals are near. */
export const QUEUE_FILL_WARNING = 0.8
/** Share of requests answered 429 worth a look: beyond the odd client over its limit. */
export const TOO_MANY_REQUESTS_RATIO = 0.05
/**
 * Realized quality alerts (the edge's hourly `edge_infer_realized_*` gauges, by serving time):
 * labels a figure needs before it is trusted, how far (absolute accuracy) the stable version may
 * fall below its own level of the past week, and how far the label-free estimate may stray from
 * the realized figure before its calibration is suspect.
 */
export const QUALITY_ALERT_MIN_LABELS = 200
export const QUALITY_DROP_MARGIN = 0.05
export const ESTIMATE_DIVERGENCE_MARGIN = 0.1
/** A model's stable version: the one most of its traffic goes to (variant names are the rollout's own). */
const STABLE_VERSION = `(${WEIGHT_METRIC} == on (model) group_left max by (model) (${WEIGHT_METRIC}))`
const LABELLED = `(${qualityGauge('realized', 'labels')} >= ${QUALITY_ALERT_MIN_LABELS})`

/** The backend's job label: a ServiceMonitor names the job after the Service. */
export const BACKEND_JOB = defaultConfig.name
/** The labels the ServiceMonitor's scrape gives the backend's series, which the KEDA query selects on. */
const KEDA_SELECTOR = `namespace="${defaultConfig.namespace}",service="${defaultConfig.name}"`
/** The pod label the ServiceMonitor copies onto every series (podTargetLabels `edge-infer/variant`). */
export const VARIANT_LABEL = 'edge_infer_variant'

export interface RecordingRule {
  record: string
  expr: string
}

export type Severity = 'critical' | 'warning'

/** An alert as a signal and the condition on it, so the signal can be queried (and graphed) alone. */
export interface AlertRule {
  alert: string
  /** The value the condition compares, with the labels the alert carries. */
  signal: string
  /** Appended to the signal: `<signal> <condition>` is the alert's expression. */
  condition: string
  for: string
  severity: Severity
  /** One line; only `{{ $labels.<name> }}` templates (the unit tests expand them). */
  summary: string
  /** What to look at, then what to do. */
  runbook: string
}

export interface RuleGroup<R> {
  name: string
  rules: R[]
}

/** `num / den`, 0 where `den` has series and `num` has none (a counter never incremented is absent, not 0). */
const ratioOrZero = (num: string, den: string): string => `(${num} or ${den} * 0) / ${den}`

const sumRate = (by: string, selector: string, window: string): string => `sum by (${by}) (rate(${selector}[${window}]))`

const quantile = (q: number, histogram: string, by: string, window = '5m'): string =>
  `histogram_quantile(${q}, sum by (le, ${by}) (rate(${histogram}_bucket[${window}])))`

const EDGE_BY = 'model, version, variant'
const BACKEND_BY = 'model, version'
/** What a client waited for: every variant but the shadow copy. */
const CLIENT_FACING = 'variant!="shadow"'

/** Recorded per pod: each replica has its own queue and its own bound. */
export const QUEUE_FILL = 'instance_model_version:edge_infer_backend_queue_fill:ratio'

const SHADOW_BY = 'model, version, shadow_version'
/** Per (model, served version, shadow version) over 5 min: share of compared rows whose label agrees, mean and p99 |Δp|. */
export const SHADOW_RECORDINGS = {
  agreement: 'model_version_shadow_version:edge_infer_shadow_agreement:ratio_rate5m',
  meanDiff: 'model_version_shadow_version:edge_infer_shadow_probability_diff:mean5m',
  p99Diff: 'model_version_shadow_version:edge_infer_shadow_probability_diff:p99_5m',
} as const

export const sloErrorRatio = (window: SloWindow): string => `model:edge_infer_slo_latency_errors:ratio_rate${window}`

const sloRecordings: RecordingRule[] = SLO_WINDOWS.map((window) => ({
  record: sloErrorRatio(window),
  expr: `1 - ${sumRate('model', `${DURATION_METRIC}_bucket{${CLIENT_FACING},le="${LATENCY_SLO.thresholdSeconds}"}`, window)} / ${sumRate('model', `${DURATION_METRIC}_count{${CLIENT_FACING}}`, window)}`,
}))

export const recordingGroups: Array<RuleGroup<RecordingRule>> = [
  {
    name: 'edge-infer-edge.recording',
    rules: [
      { record: 'model_version_variant:edge_infer_edge_requests:rate5m', expr: sumRate(EDGE_BY, REQUESTS_METRIC, '5m') },
      {
        record: 'model_version_variant:edge_infer_edge_errors:ratio_rate5m',
        expr: ratioOrZero(sumRate(EDGE_BY, `${REQUESTS_METRIC}{status_class="5xx"}`, '5m'), sumRate(EDGE_BY, REQUESTS_METRIC, '5m')),
      },
      { record: 'model_version_variant:edge_infer_edge_request_duration_seconds:p50_5m', expr: quantile(0.5, DURATION_METRIC, EDGE_BY) },
      { record: 'model_version_variant:edge_infer_edge_request_duration_seconds:p99_5m', expr: quantile(0.99, DURATION_METRIC, EDGE_BY) },
      ...sloRecordings,
    ],
  },
  {
    name: 'edge-infer-shadow.recording',
    rules: [
      { record: SHADOW_RECORDINGS.agreement, expr: `${sumRate(SHADOW_BY, SHADOW_AGREEING_METRIC, '5m')} / ${sumRate(SHADOW_BY, SHADOW_ROWS_METRIC, '5m')}` },
      { record: SHADOW_RECORDINGS.meanDiff, expr: `${sumRate(SHADOW_BY, `${SHADOW_DIFF_METRIC}_sum`, '5m')} / ${sumRate(SHADOW_BY, `${SHADOW_DIFF_METRIC}_count`, '5m')}` },
      { record: SHADOW_RECORDINGS.p99Diff, expr: quantile(0.99, SHADOW_DIFF_METRIC, SHADOW_BY) },
    ],
  },
  {
    name: 'edge-infer-backend.recording',
    rules: [
      { record: 'model_version_status:edge_infer_backend_requests:rate5m', expr: sumRate(`${BACKEND_BY}, status`, BACKEND.requests, '5m') },
      { record: 'model_version:edge_infer_backend_request_duration_seconds:p50_5m', expr: quantile(0.5, BACKEND.requestDuration, BACKEND_BY) },
      { record: 'model_version:edge_infer_backend_request_duration_seconds:p99_5m', expr: quantile(0.99, BACKEND.requestDuration, BACKEND_BY) },
      { record: 'model_version_reason:edge_infer_backend_batches:rate5m', expr: sumRate(`${BACKEND_BY}, reason`, BACKEND.batches, '5m') },
      { record: QUEUE_FILL, expr: `${BACKEND.queueDepth} / ${BACKEND.queueCapacity}` },
    ],
  },
]

/** Burn rate `factor` of the error budget over a long and a short window (the short one ends the alert soon after the cause). */
const burn = (factor: number, long: SloWindow, short: SloWindow): Pick<AlertRule, 'signal' | 'condition'> => {
  const ratio = Number((factor * ERROR_BUDGET).toPrecision(6))
  return { signal: sloErrorRatio(long), condition: `> ${ratio} and ${sloErrorRatio(short)} > ${ratio}` }
}

const sloRunbook =
  'Panel "p50 / p99 per variant (edge)": one variant or all? One: pin clients off it (rollout PUT, weight 0). All: look at backend queue time vs compute time and replicas vs the KEDA target; scale out or shed load.'

export const alertGroups: Array<RuleGroup<AlertRule>> = [
  {
    name: 'edge-infer.alerts',
    rules: [
      {
        alert: 'EdgeInferFeatureDrift',
        // Replicas share drift counts (Redis), so each reports the same verdict: one alert per feature.
        signal: `max by (model, version, feature) (${BACKEND.driftAlerting})`,
        condition: '> 0',
        for: '0m',
        severity: 'warning',
        summary: '{{ $labels.model }} v{{ $labels.version }}: feature {{ $labels.feature }} drifted for 3 consecutive critical windows',
        runbook: 'GET /v1/models/{{ $labels.model }}/versions/{{ $labels.version }}/drift for PSI/KS per feature (__prediction__ is the output histogram). Input drift on every version: upstream data changed, check the client or feature store; on one version only: that model, roll it back.',
      },
      {
        alert: 'EdgeInferDatasetDrift',
        signal: `max by (model, version) (${BACKEND.driftDatasetVerdict})`,
        condition: '>= 2',
        for: '15m',
        severity: 'warning',
        summary: '{{ $labels.model }} v{{ $labels.version }}: dataset drift verdict critical for 15 min',
        runbook: 'Panel "Drift verdict per feature": which features turned critical together. A shared upstream change: fix the source or plan retraining with a new baseline; until then watch the prediction histogram and error ratio.',
      },
      {
        alert: 'EdgeInferCanaryRolledBack',
        signal: `sum by (model) (increase(${DECISIONS_METRIC}{action="rollback"}[15m]))`,
        condition: '> 0',
        for: '0m',
        severity: 'warning',
        summary: '{{ $labels.model }}: the rollout controller rolled a canary back',
        runbook: 'GET /v1/models/{{ $labels.model }}/rollout/history for the reason (NaN outputs, error ratio, prediction drift). Traffic is already on stable; fix the candidate and start a new canary, do not re-raise the weight by hand.',
      },
      {
        alert: 'EdgeInferQueueNearCapacity',
        signal: QUEUE_FILL,
        condition: `> ${QUEUE_FILL_WARNING}`,
        for: '2m',
        severity: 'warning',
        summary: '{{ $labels.instance }} {{ $labels.model }} v{{ $labels.version }}: queue above 80% of max_queue_size',
        runbook: 'Panel "Queue depth per replica vs KEDA target": replicas at maxReplicas or pods pending? Raise maxReplicas or add nodes; a single hot pod: check its execution provider and compute time.',
      },
      {
        alert: 'EdgeInferBackendQueueFull',
        signal: ratioOrZero(
          sumRate('model', `${BACKEND.rejected}{reason="queue_full"}`, '5m'),
          sumRate('model', BACKEND.requests, '5m'),
        ),
        condition: `> ${TOO_MANY_REQUESTS_RATIO}`,
        for: '5m',
        severity: 'critical',
        summary: '{{ $labels.model }}: backend refuses over 5% of requests with 429 (queue full)',
        runbook: 'Panels "Rejections" and "Replicas": capacity is short. Scale out (KEDA maxReplicas, GPU nodes); the edge falls back to Lambda where configured. Check that KEDA reads Prometheus (ScaledObject status).',
      },
      {
        alert: 'EdgeInferEdgeTooManyRequests',
        signal: ratioOrZero(sumRate('model', `${REQUESTS_METRIC}{code="429"}`, '5m'), sumRate('model', REQUESTS_METRIC, '5m')),
        condition: `> ${TOO_MANY_REQUESTS_RATIO}`,
        for: '5m',
        severity: 'warning',
        summary: '{{ $labels.model }}: the edge answers over 5% of requests with 429',
        runbook: 'Panel "Non-2xx answers by code": per-key rate limits (one client over its limit: contact it or raise rate_limit_per_minute) or backend queue-full passed through (see EdgeInferBackendQueueFull).',
      },
      {
        alert: 'EdgeInferLatencySLOFastBurn',
        ...burn(14.4, '1h', '5m'),
        for: '2m',
        severity: 'critical',
        summary: '{{ $labels.model }}: latency SLO (99% within 250 ms) burning its 30-day budget 14.4x fast (2% in 1 h)',
        runbook: sloRunbook,
      },
      {
        alert: 'EdgeInferLatencySLOSlowBurn',
        ...burn(6, '6h', '30m'),
        for: '15m',
        severity: 'warning',
        summary: '{{ $labels.model }}: latency SLO (99% within 250 ms) burning its 30-day budget 6x fast (5% in 6 h)',
        runbook: sloRunbook,
      },
      {
        alert: 'EdgeInferBackendNotReady',
        // A scrape that fails leaves no readiness series: `up` (0) stands in for it.
        signal: `min by (job, instance) (${BACKEND.ready} or on (job, instance) up{job="${BACKEND_JOB}"})`,
        condition: '== 0',
        for: '5m',
        severity: 'critical',
        summary: '{{ $labels.instance }}: backend not ready (or not scraped) for 5 min',
        runbook: 'kubectl describe pod / logs: init container model fetch (MANIFEST mismatch, S3 credentials), warm-up, OOM. /v2/repository/index says why a version did not load.',
      },
      {
        alert: 'EdgeInferBackendTargetAbsent',
        // No target at all leaves no `up` series: EdgeInferBackendNotReady has nothing to compare.
        signal: `absent(up{job="${BACKEND_JOB}"})`,
        condition: '== 1',
        for: '5m',
        severity: 'critical',
        summary: 'no backend target scraped for 5 min (job {{ $labels.job }})',
        runbook: 'Prometheus /targets: is the ServiceMonitor selected (its labels vs the Prometheus serviceMonitorSelector), does the Service have endpoints (kubectl get endpoints), does the NetworkPolicy admit Prometheus to the metrics port? No pods at all: kubectl get deploy,pods -n edge-infer.',
      },
      {
        alert: 'EdgeInferQueueDepthAbsent',
        // What KEDA reads: without it KEDA holds its fallback replica count, blind to load.
        signal: `absent(${BACKEND.queueDepth}{${KEDA_SELECTOR}})`,
        condition: '== 1',
        for: '10m',
        severity: 'critical',
        summary: 'the queue-depth gauge KEDA scales on has no series for 10 min',
        runbook: 'See EdgeInferBackendTargetAbsent first. Targets up but no gauge: no model version is serving (/v2/repository/index), or the series lost the namespace/service labels the KEDA query selects. KEDA runs its fallback replicas meanwhile (ScaledObject status).',
      },
      {
        alert: 'EdgeInferGpuPodOnCpu',
        // Providers ["cuda","cpu"] fall back to the CPU silently when CUDA cannot start.
        signal: `max by (instance, model, version) (${BACKEND.executionProvider}{provider="cpu",${VARIANT_LABEL}="gpu"})`,
        condition: '> 0',
        for: '5m',
        severity: 'critical',
        summary: '{{ $labels.instance }} {{ $labels.model }} v{{ $labels.version }}: a GPU pod serves on the CPU execution provider',
        runbook: 'The pod logs say why CUDA did not start (driver/CUDA version, no device: nvidia.com/gpu request, NVIDIA device plugin, image variant). Capacity is a fraction of what KEDA assumes: delete the pod to reschedule, cordon the node if it repeats.',
      },
      {
        alert: 'EdgeInferStableQualityBelowBaseline',
        // Baseline: the same version's realized accuracy averaged over the past week.
        signal: `(avg_over_time(${qualityGauge('realized', 'accuracy')}[7d]) - ${qualityGauge('realized', 'accuracy')} and on (model, version) ${LABELLED} and on (model, version) ${STABLE_VERSION})`,
        condition: `> ${QUALITY_DROP_MARGIN}`,
        for: '30m',
        severity: 'warning',
        summary: `{{ $labels.model }} v{{ $labels.version }} (stable): realized accuracy more than ${QUALITY_DROP_MARGIN} below its 7-day level`,
        runbook: 'GET /v1/models/{model}/quality?window=24h and the drift report: input drift (EdgeInferDatasetDrift) means the traffic moved; no drift with a realized drop means the world did (retrain); a label_delay shift or a feedback client change can move the labelled sample itself.',
      },
      {
        alert: 'EdgeInferQualityEstimateDiverged',
        signal: `(abs(${qualityGauge('realized', 'accuracy')} - ${qualityGauge('estimated', 'accuracy')}) and on (model, version) ${LABELLED})`,
        condition: `> ${ESTIMATE_DIVERGENCE_MARGIN}`,
        for: '1h',
        severity: 'warning',
        summary: `{{ $labels.model }} v{{ $labels.version }}: the label-free estimate (CBPE) is more than ${ESTIMATE_DIVERGENCE_MARGIN} from realized accuracy`,
        runbook: 'The calibration the estimate rests on no longer holds (concept shift, or a stale baseline): compare realized and estimated on /v1/models/{model}/quality; trust the realized figure, and regenerate the baseline (tools/training calibration on held-out rows) from recent labelled data.',
      },
      {
        alert: 'EdgeInferFallbackServing',
        signal: sumRate('model', `${REQUESTS_METRIC}{served_by="lambda"}`, '5m'),
        condition: '> 0',
        for: '5m',
        severity: 'warning',
        summary: '{{ $labels.model }}: the Lambda CPU tier is serving traffic',
        runbook: 'The GPU backend is saturated or unreachable from the edge: check EdgeInferBackendNotReady/QueueFull, the tunnel (cloudflared pods) and the edge circuit breaker; Lambda costs per request and is slower.',
      },
    ],
  },
]

export const alertExpression = (a: AlertRule): string => `${a.signal} ${a.condition}`

/** Prometheus' rule-file shape (also the PrometheusRule spec's groups). */
export interface PrometheusRuleGroup {
  name: string
  rules: Array<{ record: string; expr: string } | { alert: string; expr: string; for: string; labels: Record<string, string>; annotations: Record<string, string> }>
}

export const ruleGroups = (): PrometheusRuleGroup[] => [
  ...recordingGroups.map((g) => ({ name: g.name, rules: g.rules.map((r) => ({ record: r.record, expr: r.expr })) })),
  ...alertGroups.map((g) => ({
    name: g.name,
    rules: g.rules.map((a) => ({
      alert: a.alert,
      expr: alertExpression(a),
      for: a.for,
      labels: { severity: a.severity },
      annotations: { summary: a.summary, runbook: a.runbook },
    })),
  })),
]

export const allAlerts = (): AlertRule[] => alertGroups.flatMap((g) => g.rules)
export const allRecordings = (): RecordingRule[] => recordingGroups.flatMap((g) => g.rules)
