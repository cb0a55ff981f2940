import type { BatcherSettings } from './batcher-settings.ts'
import { meetsSla, type Recommendation, type ReplicaPoint, type SettingOutcome, type TraceComparison } from './scenarios.ts'
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

const cell = ({ result, violatedShare }: SettingOutcome) =>
  `${int(violatedShare * result.buckets.length)} / ${int(result.rejected)} / ${(result.replicaSeconds / 3600).toFixed(2)}`

/**
 * The traces side by side: per setting, minutes violating / refused / replica-hours on each, then
 * the smallest fixed count that meets the SLA on each.
 */
export const tracesTable = (traces: readonly TraceComparison[]): string => {
  const rows = traces[0].autoscaled.map((o, i) => [o.setting.name, ...traces.map((t) => cell(t.autoscaled[i]))])
  const fixed = traces.map((t) => t.fixed[t.fixed.length - 1])
  rows.push(['smallest fixed count meeting the SLA', ...fixed.map((f) => (f && meetsSla(f) ? `${f.setting.config.minReplicas} replicas: ${cell(f)}` : 'none tried met it'))])
  for (const t of traces) for (const f of t.fixed.slice(0, -1)) rows.push([`(${t.name}: ${f.setting.name})`, ...traces.map((u) => (u === t ? cell(f) : ''))])
  return markdownTable(['setting', ...traces.map((t) => `${t.name}: violating min / refused / replica-h`)], rows)
}

/** Whether `a` met the SLA with fewer replica-hours than the smallest fixed count that met it on `t`. */
const beats = (a: SettingOutcome, t: TraceComparison): boolean => {
  const f = t.fixed[t.fixed.length - 1]
  return meetsSla(a) && f !== undefined && meetsSla(f) && a.result.replicaSeconds < f.result.replicaSeconds
}

const names = (traces: readonly TraceComparison[]) => traces.map((t) => t.name).join(' and ')

/**
 * Per autoscaled setting: whether it met the SLA with fewer replica-hours than the smallest fixed
 * count on every trace that asks for it (`mustBeat`), and met the SLA on the others.
 */
export const verdicts = (traces: readonly TraceComparison[]): string[] =>
  traces[0].autoscaled.map((o, i) => {
    const toBeat = traces.filter((t) => t.mustBeat)
    const toMeet = traces.filter((t) => !t.mustBeat)
    const lost = toBeat.filter((t) => !beats(t.autoscaled[i], t))
    const missed = toMeet.filter((t) => !meetsSla(t.autoscaled[i]))
    const beaten = lost.length === 0
      ? `beats the smallest fixed count on ${names(toBeat)}`
      : `does not beat the smallest fixed count on ${names(lost)}`
    const met = toMeet.length === 0 ? '' : missed.length === 0 ? `; meets the SLA on ${names(toMeet)}` : `; misses the SLA on ${names(missed)}`
    return `${o.setting.name}: ${beaten}${met}`
  })

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
  /** The queue-depth target's recommendation; not run beside a rate trigger. */
  recommendation?: Recommendation
  chartFile: string
  runSeconds: number
  /** The committed trace and the held-out one, side by side. */
  traces: readonly TraceComparison[]
  holdoutDescription: string
  /** The third column, the hour at the daily peak, when there is one. */
  peakDescription?: string
  /** The replica's capacity, rows/s, as the rendered autoscaler states it. */
  capacityRps: number
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
  a + p·b: a = ${s.fit.aUs} µs per batch, and p set so full batches of ${b.maxBatchSize} drain **${int(r.capacityRps)} rows/s**, the replica capacity
  the rendered autoscaler states (\`edge-infer/replica-capacity-rows-per-second\`, from \`infra/k8s/sizing.ts\`; its rate target is a share of
  the same figure). That figure is the measured p = c + f = (${s.fit.cUsPerRow} + ${s.front.perRequestUs}) µs: the engine's t(b) = a + c·b fitted over b = ${s.points.map((p) => p.rows).join(', ')}
  and the per-request front work f (HTTP, JSON, validation, drift counting: the backend's CPU time per request under batched load), both from
  \`${s.command}\` (${s.measuredAt}, ${s.node}, load average ${s.loadAverage1m}; \`load/sim/service-time.json\`).
- **Routing**: ${r.routing} over ready pods (kube-proxy's iptables mode picks an endpoint at random, IPVS round-robin).
- **Autoscaler** (from \`infra/k8s/rendered/autoscaling-keda.yaml\`): ${c.minReplicas}–${c.maxReplicas} replicas, target ${c.target} rows per replica
  (AverageValue: desired = ceil(sum / target) unless within the 10 % tolerance), HPA sync every 15 s, the gauge as Prometheus
  last scraped it (every ${r.scrapeIntervalS} s, the ServiceMonitor's interval${c.useCachedMetrics ? `, then cached by KEDA for ${c.pollingIntervalS} s` : '; KEDA\'s metrics server queries Prometheus on each HPA read, so pollingInterval ' + String(c.pollingIntervalS) + ' s only governs activation from zero'}),
  behavior ${behaviorLine(c)}. cooldownPeriod (${c.cooldownPeriodS} s) applies only to scaling to zero, which min ${c.minReplicas} rules out;
  the fallback is not exercised (Prometheus never fails here); what it does: with \`ignoreNullValues: "false"\` a query that
  answers nothing (the target lost, the series gone) is an error, not a 0, and after ${c.fallback?.failureThreshold ?? '-'} failed polls KEDA holds
  ${c.fallback?.replicas ?? '-'} replicas until the metric is back — it neither sinks to min nor follows the traffic meanwhile.
  ${c.rate ? 'A trace starts mid-day, so the autoscaled runs start at the count the rate trigger settles at for the first minute (the min without a rate trigger).' : ''}
- **Pods**: a new pod serves after the start delay (scheduling, image pull, model load and warm-up); a deleted one leaves
  the endpoints at once and finishes its queue. Latency is arrival at the pod to the end of its batch (no network).

## Settings compared

${comparisonTable(r.outcomes)}

"minutes violating": minutes whose p95 broke the SLA or that refused a request. replica-hours: pods held (ready or starting) over time.

## The traces side by side

The committed trace (above), one the settings were never tuned on: ${r.holdoutDescription}${r.peakDescription ? `; and ${r.peakDescription}` : ''}. Each cell: minutes violating / requests
refused / replica-hours. A fixed count meets the SLA when no minute violates and nothing is refused.

${tracesTable(r.traces)}

${verdicts(r.traces).map((v) => `- ${v}`).join('\n')}

## One replica at a steady rate

${curveTable(r.curve)}

${rec ? recommendationSection(r, rec) : `## Queue-depth recommendation

Not run: with a leading rate trigger the queue-depth target no longer decides when to scale up, and each try is a run of the whole trace.
`}`
}

const recommendationSection = (r: ReportInput, rec: Recommendation): string => `## Recommendation for p95 ≤ ${ms(r.slaP95S)} ms at ${int(r.peakRps)} req/s peak

- **target ${rec.target} rows per replica** (≈ ${int(rec.targetRps)} req/s per replica): one replica meets the SLA up to ${int(rec.slaRps)} req/s,
  where its mean depth is ${rec.slaDepth.toFixed(1)} rows; the target starts there less the 10 % the HPA tolerates above it, and is
  lowered (operating points of 100, 90, … 40 % of that rate) until the trace runs with the committed min without refusals and
  with at most 1 % of its minutes violating: a spike must fit into the running replicas' headroom until new pods are ready.
- **max ${rec.maxReplicas} replicas**: ${int(r.peakRps)} req/s ÷ ${int(rec.targetRps)} req/s per replica.
- **min ${rec.minReplicas} replicas**: the fewest (up to the committed min) that still pass
  (tried: ${rec.tried.map((t) => `min ${t.setting.config.minReplicas}/max ${t.setting.config.maxReplicas} → ${pct(t.violatedShare)}, ${int(t.result.rejected)} refused`).join('; ')}).
`
