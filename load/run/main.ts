import { runIfMain } from '../../tools/cli/direct.ts'
import { cleanUp, installSignalHandlers } from '../harness/processes.ts'
import { SEEDED_USER_IDS, createPayloads, crossedThresholds, totalDurationS } from '../scenarios/index.js'
import { loadAverage } from '../harness/cpu.ts'
import type { LoadArgs } from './args.ts'
import { runScenario } from './autocannon-run.ts'
import { fetchCatalog } from '../harness/catalog.ts'
import { errorRate, latencySummary } from '../harness/outcomes.ts'
import { startLocalStack } from '../harness/stack.ts'
import { progressLine, summaryTables } from './summary.ts'

/**
 * `edge-infer load` (`npm run load`): plays a scenario (load/scenarios/) with autocannon against any edge, or a
 * local stack it starts and stops, prints a live progress line and a summary table, and exits 1
 * when the scenario's SLA was not held (2 on a usage error). Flags: tools/cli/program.ts.
 */

/** Rewritten in place on a terminal; elsewhere (CI logs, pipes) a plain line every few seconds. */
const PLAIN_PROGRESS_EVERY_S = 5

/** Runs the scenario; answers the exit code (0 SLA held, 1 crossed). */
export const runLoad = async (args: LoadArgs): Promise<number> => {
  installSignalHandlers()
  const { scenario } = args
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const loadBefore = loadAverage()
  const stack = args.target.kind === 'local' ? await startLocalStack(log) : undefined
  try {
    const target = stack?.edgeUrl ?? (args.target.kind === 'remote' ? args.target.url : '')
    const apiKey = stack?.apiKey ?? (args.target.kind === 'remote' ? args.target.apiKey : '')
    const catalog = await fetchCatalog(target, apiKey, args.model)
    const payloads = createPayloads({ catalog, mix: scenario.mix, seed: args.seed, knownIds: args.knownIds ?? SEEDED_USER_IDS })
    log(`${scenario.name}: ${scenario.description}; ${totalDurationS(scenario).toFixed(0)} s, peak ${scenario.peakRate} req/s, at most ${args.connections} connections → ${target}${payloads.path}${stack ? ' (local stack)' : ''}`)
    const tty = process.stdout.isTTY === true
    let lastPlain = 0
    const { outcomes, elapsedS } = await runScenario({
      target, apiKey, payloads, scenario, connections: args.connections,
      onProgress: (progress) => {
        if (tty) process.stdout.write(`\r${progressLine(progress)}\x1b[K`)
        else if (progress.elapsedS - lastPlain >= PLAIN_PROGRESS_EVERY_S) {
          lastPlain = progress.elapsedS
          process.stdout.write(`${progressLine(progress)}\n`)
        }
      },
    })
    if (tty) process.stdout.write('\n')
    const { p95Ms, p99Ms } = latencySummary(outcomes.latenciesMs)
    const crossed = crossedThresholds(scenario.sla, { p95Ms, p99Ms, errorRate: errorRate(outcomes) })
    const { sla } = scenario
    process.stdout.write([
      '',
      summaryTables(scenario, outcomes, elapsedS),
      '',
      `SLA: p95 < ${sla.p95Ms} ms, p99 < ${sla.p99Ms} ms, error rate < ${(sla.maxErrorRate * 100).toFixed(2)}% (failures: transport errors, timeouts, any status but the one the input deserves; the refusals the scenario asked for are not failures)`,
      crossed.length === 0 ? 'SLA held.' : `SLA crossed: ${crossed.join('; ')}`,
      `load average (1/5/15 min) at start ${loadBefore}, at end ${loadAverage()}; autocannon in this process, closed loop paced per slice, 127.0.0.1 shares the cores with the target when local`,
      '',
    ].join('\n'))
    return crossed.length === 0 ? 0 : 1
  } finally {
    await stack?.stop()
    await cleanUp()
  }
}

// Run as a file (`tsx load/run/main.ts …`): the same as `edge-infer load …`.
runIfMain(import.meta.url, ['load'])
