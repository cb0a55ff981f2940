import { mkdirSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { ROOT } from '../harness/servers.ts'
import { UsageError } from '../harness/args.ts'
import { runIfMain } from '../../tools/cli/direct.ts'
import { batcherSettingsOf } from './batcher-settings.ts'
import { renderChart } from './chart.ts'
import { comparisonTable, renderReport } from './report.ts'
import { readHorizontalPodAutoscaler, readReplicaCapacity, readScaledObject, readScrapeIntervalS } from './scaler-config.ts'
import { BUCKET_S, compareOnTrace, recommend, replicaCurve, runSetting, smallestFixed, type Setting, type Tier } from './scenarios.ts'
import { readServiceTime, serviceTimeAtCapacity } from './service-time.ts'
import type { Routing } from './simulate.ts'
import { centredStartHour, DEFAULT_SPIKES_PER_DAY, generateTrace, HOLDOUT, holdoutTrace, peakHourTrace, peakRate, readTrace, scaleTrace, spikeCount, traceDurationS } from './trace.ts'

/**
 * `edge-infer simulate` (`npm run sim:autoscale`): the GPU tier under a day of traffic with the
 * committed KEDA settings and a few variations; prints the comparison and writes
 * autoscale-<date>.md and .svg into --out (default load/reports/). Flags: tools/cli/program.ts.
 */

export const ROUTINGS: readonly Routing[] = ['random', 'round-robin', 'least-loaded']

/** The flags as the command line gives them (camel-cased by commander), before they are checked. */
export interface SimulateFlags {
  trace?: string
  slaP95?: string
  peak?: string
  startDelay?: string
  seed?: string
  hours?: string
  start?: string
  routing?: string
  out?: string
}

const positive = (name: string, value: string | undefined, fallback: number): number => {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got ${JSON.stringify(value)}`)
  return n
}

/** `--start`: an hour of the day, 0 up to 24. */
const hourOfDay = (value: string): number => {
  const n = Number(value)
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n >= 24) throw new UsageError(`--start must be an hour of the day from 0 up to 24, got ${JSON.stringify(value)}`)
  return n
}

/** 6.5 → 06:30. */
export const clock = (hour: number): string => `${String(Math.floor(hour)).padStart(2, '0')}:${String(Math.round((hour % 1) * 60)).padStart(2, '0')}`

/** Runs the simulation; `command` is the command line the report names. Throws UsageError on a bad flag. */
export const simulate = (values: SimulateFlags, command: string): void => {
  const routing = (values.routing ?? 'random') as Routing
  if (!ROUTINGS.includes(routing)) throw new UsageError(`--routing must be one of ${ROUTINGS.join(', ')}, got ${JSON.stringify(values.routing)}`)
  const slaP95S = positive('sla-p95', values.slaP95, 50) / 1000
  const startDelayS = positive('start-delay', values.startDelay, 60)
  const seed = positive('seed', values.seed, 1)
  const hours = positive('hours', values.hours, 8)
  const durationS = Math.round(hours * 3600)
  const startHour = values.start === undefined ? centredStartHour(durationS) : hourOfDay(values.start)

  const recorded = values.trace === undefined ? undefined : readTrace(values.trace)
  const trace = recorded
    ? (values.peak === undefined ? recorded : scaleTrace(recorded, positive('peak', values.peak, 1)))
    : generateTrace({ durationS, peakRps: positive('peak', values.peak, 12_000), seed, startHour })
  const peakRps = trace.kind === 'rates' ? peakRate(trace) : positive('peak', values.peak, 1)

  const service = readServiceTime()
  const batcher = batcherSettingsOf('credit-risk')
  // The capacity the rate target was sized from, so the trigger and the simulated replica agree.
  const capacityRps = readReplicaCapacity()
  const tier: Tier = {
    batcher,
    serviceTime: serviceTimeAtCapacity(service, capacityRps / batcher.instances, batcher.maxBatchSize),
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
    variant(`committed KEDA (min ${committed.minReplicas}, max ${committed.maxReplicas}, target ${committed.target}${committed.rate ? ` rows and ${committed.rate.target} req/s` : ''})`, {}),
    { name: 'committed HPA-only variant', config: readHorizontalPodAutoscaler(), startDelayS },
    ...(committed.rate ? [variant('queue depth only (no rate trigger)', { rate: undefined })] : []),
    // Variations of the queue-depth trigger alone; beside a rate trigger that leads they change nothing and only cost run time.
    ...(committed.rate ? [] : [
      variant(`target ${committed.target * 2}`, { target: committed.target * 2 }),
      variant(`target ${Math.max(1, Math.round(committed.target / 2))}`, { target: Math.max(1, Math.round(committed.target / 2)) }),
      variant(`min ${committed.minReplicas + 2} replicas`, { minReplicas: committed.minReplicas + 2 }),
      variant('scale-down window 60 s', { behavior: { ...committed.behavior, scaleDown: { ...committed.behavior.scaleDown, stabilizationWindowSeconds: 60 } } }),
    ]),
    variant(`start delay ${startDelayS * 3} s`, {}, startDelayS * 3),
  ]
  const outcomes = settings.map((s) => {
    progress(`simulating: ${s.name}`)
    return runSetting(tier, trace, s)
  })
  progress('one replica at steady rates')
  const curve = replicaCurve(tier)
  // The queue-depth target's recommendation tunes the only trigger there was; beside a leading rate trigger it is not run (each try is a run of the whole trace).
  const recommendation = committed.rate ? undefined : (progress('recommendation'), recommend(tier, trace, settings[0], curve, peakRps))
  const all = recommendation ? [...outcomes, recommendation.outcome] : outcomes
  // The committed settings compared with fixed counts on this trace, on one they never saw, and (generated traces) on the hour at the daily peak.
  const compared = [0, 1]
  const fixedLimit = committed.maxReplicas
  progress('fixed replica counts')
  const holdout = holdoutTrace(durationS, peakRps, seed, startHour)
  const peakWindow = !recorded && durationS !== 3600
  const traces = [
    { name: 'committed trace', autoscaled: compared.map((i) => outcomes[i]), fixed: smallestFixed(tier, trace, settings[0], peakRps, fixedLimit), mustBeat: true },
    compareOnTrace(tier, 'held-out trace', holdout, compared.map((i) => settings[i]), peakRate(holdout), fixedLimit, progress),
    ...(peakWindow ? [compareOnTrace(tier, 'peak hour', peakHourTrace(peakRps, seed), compared.map((i) => settings[i]), peakRps, fixedLimit, progress, false)] : []),
  ]
  const window = recorded ? 'the same length' : `the same hours (from ${clock(startHour)})`
  const holdoutDescription = `generated, seed ${seed + HOLDOUT.seedOffset}, ${window}, ${HOLDOUT.spikesPerDay} spikes a day (+50–100 % for 2–10 min; ${spikeCount(durationS, HOLDOUT.spikesPerDay)} in this window), the same peak`
  const peakDescription = peakWindow ? `the hour centred on the daily peak (13:30–14:30), seed ${seed}, ${DEFAULT_SPIKES_PER_DAY} spikes a day (${spikeCount(3600)} in it), the same peak: nearly flat, so no autoscaler can hold fewer replica-hours there than a fixed count sized for it — it only has to meet the SLA` : undefined
  const runSeconds = (performance.now() - started) / 1000

  const date = new Date().toISOString().slice(0, 10)
  const reports = values.out ?? join(ROOT, 'load', 'reports')
  mkdirSync(reports, { recursive: true })
  const svgFile = join(reports, `autoscale-${date}.svg`)
  const mdFile = join(reports, `autoscale-${date}.md`)
  const traceDescription = recorded
    ? `Trace: ${basename(values.trace!)} (${(traceDurationS(trace) / 3600).toFixed(1)} h${values.peak ? `, scaled to a ${values.peak} req/s peak` : ''})`
    : `Trace: generated, ${hours} h from ${clock(startHour)} (the daily peak is at 14:00), diurnal (a cosine, trough 15 % of the peak at 02:00) with ~${DEFAULT_SPIKES_PER_DAY} spikes a day of +50–100 % for 2–10 min (${spikeCount(durationS)} in this window), Poisson arrivals, peak ${Math.round(peakRps).toLocaleString('en-US')} req/s, seed ${seed}`
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
    command,
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
    traces,
    holdoutDescription,
    peakDescription,
    capacityRps,
  }))
  process.stdout.write(`${comparisonTable(all)}${recommendation ? `\n\nrecommended: min ${recommendation.minReplicas}, max ${recommendation.maxReplicas}, target ${recommendation.target} rows per replica` : ''}\nwrote ${mdFile}\n      ${svgFile}\n`)
}

// Run as a file (`tsx load/sim/main.ts …`): the same as `edge-infer simulate …`.
runIfMain(import.meta.url, ['simulate'])
