import { formatTable } from '../harness/table.ts'
import type { Scenario } from '../scenarios/shapes.js'
import { answered, errorRate, latencySummary, type Outcomes } from '../harness/outcomes.ts'

const ms = (x: number): string => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-')
const int = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-')
const percent = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : '-')

/** One line of progress: seconds, the rate asked for, answers so far, their p95, failures. */
export const progressLine = ({ elapsedS, totalS, rate, outcomes }: { elapsedS: number; totalS: number; rate: number; outcomes: Outcomes }): string => {
  const { p95Ms } = latencySummary(outcomes.latenciesMs.slice(-2_000))
  const failures = outcomes.unexpected + outcomes.transportErrors + outcomes.timeouts
  return `${elapsedS.toFixed(0).padStart(4)}/${totalS.toFixed(0)} s  rate ${rate}/s  answered ${int(answered(outcomes))}  p95 (recent) ${ms(p95Ms)} ms  refused as expected ${outcomes.expectedRefusals}  failures ${failures}`
}

/** The run's table: throughput, latency percentiles, status classes and failures; then answers by variant. */
export const summaryTables = (scenario: Scenario, outcomes: Outcomes, elapsedS: number): string => {
  const { p50Ms, p95Ms, p99Ms } = latencySummary(outcomes.latenciesMs)
  const classes = ['2xx', '4xx', '5xx'].map((c) => int(outcomes.byStatusClass.get(c) ?? 0))
  const main = formatTable(
    ['scenario', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', '2xx', '4xx', '5xx', '4xx expected', 'unexpected status', 'errors', 'timeouts', 'error rate'],
    [[scenario.name, int(answered(outcomes) / elapsedS), ms(p50Ms), ms(p95Ms), ms(p99Ms), ...classes, int(outcomes.expectedRefusals), int(outcomes.unexpected), int(outcomes.transportErrors), int(outcomes.timeouts), percent(errorRate(outcomes))]],
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
  const variants = formatTable(
    ['variant (X-Variant)', 'answers', 'p50 ms', 'p95 ms', 'p99 ms'],
    [...outcomes.byVariant].sort(([a], [b]) => a.localeCompare(b)).map(([variant, latencies]) => {
      const s = latencySummary(latencies)
      return [variant, int(latencies.length), ms(s.p50Ms), ms(s.p95Ms), ms(s.p99Ms)]
    }),
    ['left', 'right', 'right', 'right', 'right'],
  )
  return `${main}\n\n${variants}`
}
