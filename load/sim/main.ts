import { mkdirSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { parseArgs } from 'node:util'
import { performance } from 'node:perf_hooks'
import { ROOT } from '../harness/servers.ts'
import { batcherSettingsOf } from './batcher-settings.ts'
import { renderChart } from './chart.ts'
import { comparisonTable, renderReport } from './report.ts'
import { readHorizontalPodAutoscaler, readScaledObject, readScrapeIntervalS } from './scaler-config.ts'
import { BUCKET_S, recommend, replicaCurve, runSetting, type Setting, type Tier } from './scenarios.ts'
import { readServiceTime, replicaServiceTime } from './service-time.ts'
import type { Routing } from './simulate.ts'
import { generateTrace, peakRate, readTrace, scaleTrace, traceDurationS } from './trace.ts'

/**
 * `npm run sim:autoscale -- [--trace FILE] [--sla-p95 MS] [--peak RPS] [--start-delay S] [--seed N]
 * [--hours H] [--routing random|round-robin|least-loaded]`: the GPU tier under a day of traffic with
 * the committed KEDA settings and a few variations; prints the comparison and writes
 * load/reports/autoscale-<date>.md and .svg.
 */

const USAGE = 'usage: sim:autoscale -- [--trace FILE] [--sla-p95 MS] [--peak RPS] [--start-delay S] [--seed N] [--hours H] [--routing random|round-robin|least-loaded]'

const positive = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (${USAGE})`)
  return n
}

const { values } = parseArgs({
  options: {
    trace: { type: 'string' },
    'sla-p95': { type: 'string' },
    peak: { type: 'string' },
    'start-delay': { type: 'string' },
    seed: { type: 'string' },
    hours: { type: 'string' },
    routing: { type: 'string' },
  },
})

const routing = (values.routing ?? 'random') as Routing
if (!['random', 'round-robin', 'least-loaded'].includes(routing)) throw new Error(USAGE)
const slaP95S = positive('sla-p95', values['sla-p95'], 50) / 1000
const startDelayS = positive('start-delay', values['start-delay'], 60)
const seed = positive('seed', values.seed, 1)
const hours = positive('hours', values.hours, 8)

const recorded = values.trace === undefined ? undefined : readTrace(values.trace)
const trace = recorded
  ? (values.peak === undefined ? recorded : scaleTrace(recorded, positive('peak', values.peak, 1)))
  : generateTrace({ durationS: Math.round(hours * 3600), peakRps: positive('peak', values.peak, 12_000), seed })
const peakRps = trace.kind === 'rates' ? peakRate(trace) : positive('peak', values.peak, 1)

const service = readServiceTime()
const tier: Tier = {
  batcher: batcherSettingsOf('credit-risk'),
  serviceTime: replicaServiceTime(service),
  routing,
  scrapeIntervalS: readScrapeIntervalS(),
  seed,
  slaP95S,
}
const committed = readScaledObject()
const progress = (message: string) => process.stderr.write(`${message}\n`)

const started = performance.now()
const variant = (name: string, change: Partial<Setting['config']>, delay = startDelayS): Setting => ({ name, config: { ...committed, ...change }, startDelayS: delay })
const settings: Setting[] = [
  variant(`committed KEDA (min ${committed.minReplicas}, max ${committed.maxReplicas}, target ${committed.target})`, {}),
  { name: 'committed HPA-only variant', config: readHorizontalPodAutoscaler(), startDelayS },
  variant(`target ${committed.target * 2}`, { target: committed.target * 2 }),
  variant(`target ${Math.max(1, Math.round(committed.target / 2))}`, { target: Math.max(1, Math.round(committed.target / 2)) }),
  variant(`min ${committed.minReplicas + 2} replicas`, { minReplicas: committed.minReplicas + 2 }),
  variant('scale-down window 60 s', { behavior: { ...committed.behavior, scaleDown: { ...committed.behavior.scaleDown, stabilizationWindowSeconds: 60 } } }),
  variant(`start delay ${startDelayS * 3} s`, {}, startDelayS * 3),
]
const outcomes = settings.map((s) => {
  progress(`simulating: ${s.name}`)
  return runSetting(tier, trace, s)
})
progress('one replica at steady rates')
const curve = replicaCurve(tier)
progress('recommendation')
const recommendation = recommend(tier, trace, settings[0], curve, peakRps)
const all = [...outcomes, recommendation.outcome]
const runSeconds = (performance.now() - started) / 1000

const date = new Date().toISOString().slice(0, 10)
const reports = join(ROOT, 'load', 'reports')
mkdirSync(reports, { recursive: true })
const svgFile = join(reports, `autoscale-${date}.svg`)
const mdFile = join(reports, `autoscale-${date}.md`)
const argv = process.argv.slice(2)
const traceDescription = recorded
  ? `Trace: ${basename(values.trace!)} (${(traceDurationS(trace) / 3600).toFixed(1)} h${values.peak ? `, scaled to a ${values.peak} req/s peak` : ''})`
  : `Trace: generated, ${hours} h centred on the daily peak at 14:00, diurnal (a cosine, trough 15 % of the peak at 02:00) with ~6 spikes a day of +50–100 % for 2–10 min, Poisson arrivals, peak ${Math.round(peakRps).toLocaleString('en-US')} req/s, seed ${seed}`
writeFileSync(svgFile, renderChart({
  title: `Committed KEDA settings (min ${committed.minReplicas}, max ${committed.maxReplicas}, target ${committed.target}), ${recorded ? basename(values.trace!) : `${hours} h generated trace`}, peak ${Math.round(peakRps).toLocaleString('en-US')} req/s, SLA p95 ${slaP95S * 1000} ms`,
  buckets: outcomes[0].result.buckets,
  bucketS: BUCKET_S,
  slaP95S,
  target: committed.target,
  maxReplicas: committed.maxReplicas,
}))
writeFileSync(mdFile, renderReport({
  date,
  command: `npm run sim:autoscale${argv.length ? ` -- ${argv.join(' ')}` : ''}`,
  traceDescription,
  slaP95S,
  peakRps,
  routing,
  scrapeIntervalS: tier.scrapeIntervalS,
  committed,
  batcher: tier.batcher,
  service,
  curve,
  outcomes: all,
  recommendation,
  chartFile: basename(svgFile),
  runSeconds,
}))
process.stdout.write(`${comparisonTable(all)}\n\nrecommended: min ${recommendation.minReplicas}, max ${recommendation.maxReplicas}, target ${recommendation.target} rows per replica\nwrote ${mdFile}\n      ${svgFile}\n`)
