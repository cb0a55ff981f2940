import { cleanUp, installSignalHandlers, interrupted } from '../../../harness/processes.ts'
import { formatInstructionsTable } from '../instructions.ts'
import { instructionsGate, instructionsLegend, measureInstructions, readInstructionsSettings } from '../instructions-run.ts'

/**
 * `bench:edge`'s instructions section on its own (`npx tsx load/bench/edge/instructions/main.ts`),
 * with the same env as there (BENCH_INSTRUCTIONS_*): a few minutes instead of the whole bench.
 */
const main = async (): Promise<void> => {
  installSignalHandlers()
  try {
    const gate = instructionsGate()
    if (!gate.run) {
      process.stdout.write(`${gate.reason}\n`)
      return
    }
    const settings = readInstructionsSettings()
    const started = performance.now()
    const figure = await measureInstructions(process.execPath, settings, (m) => process.stderr.write(`${m}\n`))
    process.stderr.write(`instructions: ${((performance.now() - started) / 1e3).toFixed(0)} s\n`)
    process.stdout.write(`\n${formatInstructionsTable(figure)}\n\n${instructionsLegend(process.version, settings, figure)}\n`)
  } finally {
    await cleanUp()
  }
}

main().catch((err: unknown) => {
  if (interrupted()) return
  process.stderr.write(`bench-instructions failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
