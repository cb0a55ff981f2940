import type { BatcherSettings } from './batcher-settings.ts'
import type { Recommendation, ReplicaPoint, SettingOutcome } from './scenarios.ts'
import type { AutoscalerConfig } from './scaler-config.ts'
import type { ServiceTimeMeasurement } from './service-time.ts'

const ms = (s: number) => (Number.isFinite(s) ? `${(s * 1000).toFixed(s < 0.01 ? 2 : 1)}` : '-')
const int = (x: number) => Math.round(x).toLocaleString('en-US')
const pct = (x: number) => `${(x * 100).toFixed(x < 0.1 ? 2 : 1)} %`

export const markdownTable = (headers: readonly string[], rows: readonly string[][]): string =>
  [`| ${headers.join(' | ')} |`, `|${headers.map((h, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n')

export const comparisonTable = (outcomes: readonly SettingOutcome[]): string =>
  markdownTable(
    ['setting', 'p95 ms', 'p99 ms', 'minutes violating', 'refused', 'replica-hours', 'max pods', 'mean batch'],
    outcomes.map(({ setting, result, violatedShare }) => [
      setting.name, ms(result.p95S), ms(result.p99S),
      `${int(violatedShare * result.buckets.length)} (${pct(violatedShare)})`,
      int(result.rejected), (result.replicaSeconds / 3600).toFixed(1), String(result.maxReplicas), result.meanBatchRows.toFixed(1),
    ]),
  )

export const curveTable = (curve: readonly ReplicaPoint[]): string =>
  markdownTable(['req/s per replica', 'p95 ms', 'mean depth (rows)'], curve.map((p) => [int(p.rps), ms(p.p95S), p.meanDepth.toFixed(1)]))

export interface ReportInput {
  date: string
  command: string
  traceDescription: string
  slaP95S: number
  peakRps: number
  routing: string
  scrapeIntervalS: number
  committed: AutoscalerConfig
  batcher: BatcherSettings
  service: ServiceTimeMeasurement
  curve: readonly ReplicaPoint[]
  outcomes: readonly SettingOutcome[]
  recommendation: Recommendation
  chartFile: string
  runSeconds: number
}

const behaviorLine = (c: AutoscalerConfig) => {
  const rules = (r: AutoscalerConfig['behavior']['scaleUp']) =>
    `window ${r.stabilizationWindowSeconds} s, ${r.selectPolicy} of ${r.policies.map((p) => `${p.type} ${p.value}/${p.periodSeconds} s`).join(', ')}`
  return `up: ${rules(c.behavior.scaleUp)}; down: ${rules(c.behavior.scaleDown)}`
}

export const renderReport = (r: ReportInput): string => {
  const { committed: c, batcher: b, service: s, recommendation: rec } = r
  return `# Autoscaling simulation, ${r.date}

\`${r.command}\` (${r.runSeconds.toFixed(0)} s to run). ${r.traceDescription}. SLA: p95 ≤ ${ms(r.slaP95S)} ms per minute, no refusals.

![replicas, queue depth and p95 over the trace](${r.chartFile})

## Model

- **Replica**: the backend's dynamic batcher from \`models/credit-risk/config.json\` through the backend's schema —
  ${b.dispatch} dispatch, max batch ${b.maxBatchSize} rows, max queue delay ${ms(b.maxQueueDelayS)} ms, preferred sizes ${b.preferredBatchSizes.join(', ') || 'none'}, max queue ${int(b.maxQueueSize)} rows
  (one more is refused: 429), ${b.instances} executor instance(s). A batch of b one-row requests keeps the replica busy
  a + (c + f)·b = ${s.fit.aUs} µs + (${s.fit.cUsPerRow} + ${s.front.perRequestUs}) µs·b: the engine's t(b) = a + c·b fitted over b = ${s.points.map((p) => p.rows).join(', ')}
  and the per-request front work f (HTTP, JSON, validation, drift counting), both from \`${s.command}\` (${s.measuredAt}, ${s.node},
  load average ${s.loadAverage1m}; \`load/sim/service-time.json\`). One replica's ceiling: ${int(b.maxBatchSize / ((s.fit.aUs + (s.fit.cUsPerRow + s.front.perRequestUs) * b.maxBatchSize) / 1e6))} rows/s.
- **Routing**: ${r.routing} over ready pods (kube-proxy's iptables mode picks an endpoint at random, IPVS round-robin).
- **Autoscaler** (from \`infra/k8s/rendered/autoscaling-keda.yaml\`): ${c.minReplicas}–${c.maxReplicas} replicas, target ${c.target} rows per replica
  (AverageValue: desired = ceil(sum / target) unless within the 10 % tolerance), HPA sync every 15 s, the gauge as Prometheus
  last scraped it (every ${r.scrapeIntervalS} s, the ServiceMonitor's interval${c.useCachedMetrics ? `, then cached by KEDA for ${c.pollingIntervalS} s` : '; KEDA\'s metrics server queries Prometheus on each HPA read, so pollingInterval ' + String(c.pollingIntervalS) + ' s only governs activation from zero'}),
  behavior ${behaviorLine(c)}. cooldownPeriod (${c.cooldownPeriodS} s) applies only to scaling to zero, which min ${c.minReplicas} rules out;
  the fallback (${c.fallback?.replicas ?? '-'} replicas after ${c.fallback?.failureThreshold ?? '-'} failed polls) is not exercised: Prometheus never fails here.
- **Pods**: a new pod serves after the start delay (scheduling, image pull, model load and warm-up); a deleted one leaves
  the endpoints at once and finishes its queue. Latency is arrival at the pod to the end of its batch (no network).

## Settings compared

${comparisonTable(r.outcomes)}

"minutes violating": minutes whose p95 broke the SLA or that refused a request. replica-hours: pods held (ready or starting) over time.

## One replica at a steady rate

${curveTable(r.curve)}

## Recommendation for p95 ≤ ${ms(r.slaP95S)} ms at ${int(r.peakRps)} req/s peak

- **target ${rec.target} rows per replica** (≈ ${int(rec.targetRps)} req/s per replica): one replica meets the SLA up to ${int(rec.slaRps)} req/s,
  where its mean depth is ${rec.slaDepth.toFixed(1)} rows; the target starts there less the 10 % the HPA tolerates above it, and is
  lowered (operating points of 100, 90, … 40 % of that rate) until the trace runs with the committed min without refusals and
  with at most 1 % of its minutes violating: a spike must fit into the running replicas' headroom until new pods are ready.
- **max ${rec.maxReplicas} replicas**: ${int(r.peakRps)} req/s ÷ ${int(rec.targetRps)} req/s per replica.
- **min ${rec.minReplicas} replicas**: the fewest (up to the committed min) that still pass
  (tried: ${rec.tried.map((t) => `min ${t.setting.config.minReplicas}/max ${t.setting.config.maxReplicas} → ${pct(t.violatedShare)}, ${int(t.result.rejected)} refused`).join('; ')}).
`
}
