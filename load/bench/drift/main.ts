import { join } from 'node:path'
import { generateApplicants } from '../../../tools/training/applicants.ts'
import { positiveInt } from '../../harness/env.ts'
import { scenarios, type Moments } from './scenarios.ts'
import { WINDOW_ROWS, countingCost, openDriftBench, runStream, type WindowVerdicts } from './streams.ts'
import { ROOT } from '../../harness/servers.ts'
import { formatTable } from '../../harness/table.ts'

/**
 * `npm run bench:drift`: how well the drift monitor tells drift from noise, on synthetic streams
 * from the demo model's training distribution, counted by the backend's own counter and judged
 * by its own report and 3-window alert rule. One table per question, from one run.
 *
 * Env: DRIFT_STREAMS (20 per scenario), DRIFT_QUIET_WINDOWS (200 per no-drift stream),
 * DRIFT_MAX_WINDOWS (30: a drifting stream not alerted by then counts as never).
 */

const STREAMS = positiveInt('DRIFT_STREAMS', 20)
const QUIET_WINDOWS = positiveInt('DRIFT_QUIET_WINDOWS', 200)
const MAX_WINDOWS = positiveInt('DRIFT_MAX_WINDOWS', 30)
/** Every required drift must be alerted within this many windows in every stream. */
const WORST_TARGET = 6
/** The rule's minimum: 3 critical windows in a row. */
const MEDIAN_TARGET = 3
const QUIET_CRITICAL_TARGET = 0.01

const progress = (message: string) => process.stderr.write(`${message}\n`)

const moments = (values: readonly number[]): Moments => {
  const mean = values.reduce((a, b) => a + b, 0) / values.length
  return { mean, sd: Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length) }
}

const median = (xs: readonly number[]): number => {
  const s = xs.toSorted((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const pct = (x: number) => `${(100 * x).toFixed(2)}%`

const main = async () => {
  const bench = await openDriftBench(join(ROOT, 'models/credit-risk/2'))
  try {
    const reference = generateApplicants(20_000, 6_999_999).applicants
    const all = scenarios({
      debt_ratio: moments(reference.map((a) => a.debt_ratio)),
      credit_utilization: moments(reference.map((a) => a.credit_utilization)),
      age: moments(reference.map((a) => a.age)),
    })
    const [quiet, ...drifts] = all
    const names = [...bench.spec.features.map((f) => f.name), 'prediction']

    progress(`no drift: ${STREAMS} streams × ${QUIET_WINDOWS} windows of ${WINDOW_ROWS} rows`)
    const critical = new Map(names.map((n) => [n, 0]))
    const alerts = new Map(names.map((n) => [n, 0]))
    let judged = new Map(names.map((n) => [n, 0]))
    for (let s = 0; s < STREAMS; s++) {
      const windows = await runStream(bench, quiet, s, QUIET_WINDOWS)
      let previous: WindowVerdicts | undefined
      for (const w of windows) {
        for (const n of names) {
          const verdict = w.verdicts.get(n)!
          if (verdict !== 'insufficient') judged.set(n, judged.get(n)! + 1)
          if (verdict === 'critical') critical.set(n, critical.get(n)! + 1)
          if (w.alerting.get(n) && !previous?.alerting.get(n)) alerts.set(n, alerts.get(n)! + 1)
        }
        previous = w
      }
      progress(`  stream ${s + 1}/${STREAMS}`)
    }
    judged = new Map([...judged].map(([n, j]) => [n, Math.max(1, j)]))
    const quietRows = names.map((n) => {
      const share = critical.get(n)! / judged.get(n)!
      const ok = share <= QUIET_CRITICAL_TARGET && alerts.get(n) === 0
      return [n, String(judged.get(n)), pct(share), String(alerts.get(n)), ok ? 'PASS' : 'MISS']
    })

    const driftRows: string[][] = []
    for (const scenario of drifts) {
      progress(`${scenario.name}: ${STREAMS} streams, up to ${MAX_WINDOWS} windows each`)
      const toAlert: number[] = []
      for (let s = 0; s < STREAMS; s++) {
        const windows = await runStream(bench, scenario, 1_000 + s, MAX_WINDOWS, (w) => w.alerting.get(scenario.watch) === true)
        const at = windows.findIndex((w) => w.alerting.get(scenario.watch))
        toAlert.push(at === -1 ? Number.POSITIVE_INFINITY : at + 1)
      }
      const worst = Math.max(...toAlert)
      const med = median(toAlert)
      const within = toAlert.filter((n) => n <= WORST_TARGET).length
      const show = (n: number) => (Number.isFinite(n) ? String(n) : `>${MAX_WINDOWS}`)
      const quietAlerts = alerts.get(scenario.watch) ?? 0
      const silent = quietAlerts === 0
      const verdict = scenario.required ? (med <= MEDIAN_TARGET && worst <= WORST_TARGET && silent ? 'PASS' : 'MISS') : 'reported'
      driftRows.push([scenario.name, scenario.watch, show(med), show(worst), `${within}/${STREAMS}`, String(quietAlerts), verdict])
    }

    progress('counting cost')
    const cost = await countingCost(bench, 50)
    const out = [
      `No drift: ${STREAMS} streams × ${QUIET_WINDOWS} windows of ${WINDOW_ROWS} rows (credit-risk v2, its baseline's thresholds). Targets: ≤ ${pct(QUIET_CRITICAL_TARGET)} critical windows and 0 alerts per feature.`,
      formatTable(['feature', 'windows', 'critical', 'alerts', 'target'], quietRows, ['left', 'right', 'right', 'right', 'left']),
      '',
      `Windows to alert (3 critical in a row), ${STREAMS} streams per scenario, ${WINDOW_ROWS} rows per window. Targets (required rows): median ≤ ${MEDIAN_TARGET}, every stream within ${WORST_TARGET}, and no alert on the watched feature in the no-drift streams (clean alerts).`,
      formatTable(['scenario', 'watched', 'median', 'worst', `alerted ≤ ${WORST_TARGET}`, 'clean alerts', 'target'], driftRows, ['left', 'left', 'right', 'right', 'right', 'right', 'left']),
      '',
      `Counting on the hot path (DriftCounter.record, ${bench.spec.features.length} features, 50 windows × 5 rounds): ${cost.usPerRow.toFixed(3)} µs per row = ${cost.usPerFeatureRow.toFixed(3)} µs per feature per row (target < 1 µs) → ${cost.usPerFeatureRow < 1 ? 'PASS' : 'MISS'}.`,
      `Streams: generateApplicants (the training generator) with seeds far from the training and calibration seeds; predictions by onnxruntime on models/credit-risk/2/model.onnx.`,
      `Command: npm run bench:drift   (env DRIFT_STREAMS=${STREAMS} DRIFT_QUIET_WINDOWS=${QUIET_WINDOWS} DRIFT_MAX_WINDOWS=${MAX_WINDOWS})`,
    ]
    process.stdout.write(`\n${out.join('\n')}\n`)
  } finally {
    await bench.release()
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:drift failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
