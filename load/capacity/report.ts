import type { Phase, SearchResult } from './search.ts'

/** What one step of the search measured. */
export interface CapacityStep {
  rate: number
  phase?: Phase
  /** Answers per second over the step, as the target kept up. */
  achievedRate: number
  p50Ms: number
  p95Ms: number
  p99Ms: number
  errorRate: number
  answered: number
  expectedRefusals: number
  /** Mean rows per batch the backend formed during the step; absent when it cannot be read. */
  meanBatch?: number
  /** CPU time per answer of each local server process (backend, workerd) and of the sender itself; only the sender's for a remote target. */
  cpuUsPerRequest: Record<string, number>
  /** The machine's 1-minute load average at the end of the step. */
  loadAverage1m: number
}

export interface TargetReport {
  name: string
  description: string
  search: SearchResult<CapacityStep>
  chartFile: string
  loadBefore: string
  loadAfter: string
}

const ms = (x: number): string => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-')
const int = (x: number | undefined): string => (x !== undefined && Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '-')
const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : '-')

export const capacityLine = (t: TargetReport): string => {
  const c = t.search.capacity
  if (c === undefined) return `${t.name}: the SLA did not hold even at ${int(t.search.steps[0]?.rate)} req/s`
  const beyond = t.search.knee ? `broke at ${int(t.search.knee.rate)} req/s` : `held up to the highest rate tried (${t.search.ended})`
  return `${t.name}: ${int(c.rate)} req/s sustainable (p50 ${ms(c.p50Ms)} ms, p95 ${ms(c.p95Ms)} ms, p99 ${ms(c.p99Ms)} ms, errors ${pct(c.errorRate)}${c.meanBatch !== undefined ? `, mean batch ${c.meanBatch.toFixed(1)}` : ''}); ${beyond}`
}

/** The steps of one target as a Markdown table, in the order they ran. */
export const stepsTable = (t: TargetReport, holds: (s: CapacityStep) => boolean): string => {
  const processes = [...new Set(t.search.steps.flatMap((s) => Object.keys(s.cpuUsPerRequest)))]
  const headers = ['#', 'phase', 'offered req/s', 'answered req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'error rate', 'mean batch', ...processes.map((p) => `CPU µs/req ${p}`), 'load avg', 'SLA']
  const rows = t.search.steps.map((s, i) => [
    String(i + 1), s.phase ?? '', int(s.rate), int(s.achievedRate), ms(s.p50Ms), ms(s.p95Ms), ms(s.p99Ms), pct(s.errorRate), s.meanBatch === undefined ? '-' : s.meanBatch.toFixed(1),
    ...processes.map((p) => int(s.cpuUsPerRequest[p])), s.loadAverage1m.toFixed(2), holds(s) ? 'held' : 'broke',
  ])
  const align = headers.map((_, i) => (i <= 1 ? '---' : '---:'))
  return [headers, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}
