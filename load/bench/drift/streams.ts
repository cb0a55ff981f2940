import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { InferenceSession, Tensor } from 'onnxruntime-node'
import { createLogger } from '../../../backend/logger.ts'
import { alertRule, type AlertState } from '../../../backend/monitor/drift/alert-rule.ts'
import type { Verdict } from '../../../shared/drift/report.ts'
import type { DriftCounter } from '../../../backend/monitor/drift/counter.ts'
import { driftLayout } from '../../../backend/monitor/drift/layout.ts'
import { MINUTE_MS } from '../../../shared/drift/report.ts'
import { DriftMonitor } from '../../../backend/monitor/drift/monitor.ts'
import { driftReport } from '../../../backend/monitor/drift/report.ts'
import { readReportBaseline, type ReportBaseline } from '../../../backend/monitor/drift/report-baseline.ts'
import { modelConfig } from '../../../backend/repository/model-config.ts'
import { generateApplicants } from '../../../tools/training/applicants.ts'
import { encodeRows, type Matrix } from '../../../tools/training/dataset.ts'
import { createRandom } from '../../../tools/training/random.ts'
import { featureOffsets, type FeatureSpec } from '../../../shared/feature-spec.ts'
import type { Scenario } from './scenarios.ts'

export const WINDOW_ROWS = 1_000
/** Streams start far from the seeds `models:build` trains and calibrates on. */
const SEED_BASE = 7_000_000

export interface DriftBench {
  spec: FeatureSpec
  baseline: ReportBaseline
  important: Set<string>
  counter: DriftCounter
  /** The model's probability of labels[1] per row. */
  score(x: Matrix): Promise<Float32Array>
  /** Advances the fake clock by a minute: every window is a minute of its own. */
  nextMinute(): number
  release(): Promise<void>
}

/** One version of the demo repository, counted by the backend's own DriftCounter on a fake clock. */
export const openDriftBench = async (versionDir: string): Promise<DriftBench> => {
  const config = modelConfig.parse(JSON.parse(await readFile(join(versionDir, '..', 'config.json'), 'utf8')))
  const baseline = await readReportBaseline(versionDir)
  if (!config.features) throw new Error(`${versionDir} has no feature spec`)
  let now = 0
  const monitor = new DriftMonitor({ logger: createLogger('silent'), now: () => now })
  const counter = monitor.counter(driftLayout(config.name, baseline.version, config, baseline))
  const session = await InferenceSession.create(join(versionDir, 'model.onnx'), { intraOpNumThreads: 1 })
  const input = config.features.input
  const output = config.postprocess!.output
  return {
    spec: config.features,
    baseline,
    important: new Set(config.features.features.filter((f) => f.important).map((f) => f.name)),
    counter,
    async score(x) {
      const result = await session.run({ [input]: new Tensor('float32', x.data, [x.rows, x.cols]) })
      const probabilities = result[output].data as Float32Array
      return Float32Array.from({ length: x.rows }, (_, r) => probabilities[r * 2 + 1])
    },
    nextMinute: () => (now += MINUTE_MS),
    release: () => session.release(),
  }
}

/** Counts rows `x` with class probabilities `p` ([rows, 2]) as the backend counts a served request. */
const record = (bench: DriftBench, x: Matrix, p: Float32Array): void =>
  bench.counter.record({ [bench.spec.input]: { datatype: 'FP32', dims: [x.rows, x.cols], data: x.data } }, x.rows, {
    [bench.counter.output]: { datatype: 'FP32', dims: [x.rows, 2], data: p },
  })

export interface WindowVerdicts {
  /** Feature name (and `prediction`) → this window's verdict. */
  verdicts: Map<string, Verdict>
  /** Feature name (and `prediction`) → alerting after this window, by the 3-window rule. */
  alerting: Map<string, boolean>
}

/**
 * Draws one stream of 1,000-row windows, counts each window exactly as the backend counts served
 * rows, and runs the drift report and the alert rule over it. `until` stops the stream early.
 */
export const runStream = async (
  bench: DriftBench, scenario: Scenario, stream: number, windows: number, until: (w: WindowVerdicts) => boolean = () => false,
): Promise<WindowVerdicts[]> => {
  const offsets = featureOffsets(bench.spec)
  const watched = bench.spec.features.findIndex((f) => f.name === scenario.watch)
  const draw = createRandom(SEED_BASE + stream * 7919 + 13)
  const states = new Map<string, AlertState>()
  const results: WindowVerdicts[] = []
  for (let w = 0; w < windows; w++) {
    const sample = generateApplicants(WINDOW_ROWS, SEED_BASE + stream * 100_003 + w)
    const applicants = scenario.applicant ? sample.applicants.map((a) => scenario.applicant!(a, () => draw.next())) : sample.applicants
    const x = encodeRows(bench.spec, applicants)
    if (scenario.row) {
      for (let r = 0; r < x.rows; r++) scenario.row(x.data.subarray(r * x.cols, (r + 1) * x.cols), offsets[watched], () => draw.next())
    }
    const positive = await bench.score(x)
    const p = new Float32Array(x.rows * 2)
    for (let r = 0; r < x.rows; r++) {
      const q = scenario.probability ? scenario.probability(positive[r]) : positive[r]
      p[r * 2] = 1 - q
      p[r * 2 + 1] = q
    }
    const minute = bench.nextMinute()
    record(bench, x, p)
    const report = driftReport(bench.baseline, bench.important, [await bench.counter.window(1, minute)])
    const verdicts = new Map<string, Verdict>([...report.features.map((f) => [f.name, f.verdict] as const), ['prediction', report.prediction.verdict]])
    const alerting = new Map<string, boolean>()
    for (const [name, verdict] of verdicts) {
      const state = alertRule.next(states.get(name) ?? alertRule.initial, verdict)
      states.set(name, state)
      alerting.set(name, state.alerting)
    }
    const result = { verdicts, alerting }
    results.push(result)
    if (until(result)) break
  }
  return results
}

/** Per-row cost of the hot-path counter: `record` over pre-encoded windows, no I/O. */
export const countingCost = async (bench: DriftBench, windows: number): Promise<{ usPerRow: number; usPerFeatureRow: number }> => {
  const batches: Array<{ x: Matrix; p: Float32Array }> = []
  for (let w = 0; w < windows; w++) {
    const x = encodeRows(bench.spec, generateApplicants(WINDOW_ROWS, SEED_BASE - 1 - w).applicants)
    batches.push({ x, p: new Float32Array(x.rows * 2).fill(0.5) })
  }
  const recordAll = () => {
    for (const { x, p } of batches) record(bench, x, p)
  }
  recordAll()
  const started = process.hrtime.bigint()
  const rounds = 5
  for (let i = 0; i < rounds; i++) recordAll()
  const usPerRow = Number(process.hrtime.bigint() - started) / 1e3 / (rounds * windows * WINDOW_ROWS)
  return { usPerRow, usPerFeatureRow: usPerRow / bench.spec.features.length }
}
