import { formatTable } from '../../harness/table.ts'

/**
 * The arithmetic of `bench:edge`'s instructions section, kept pure so that it can be tested:
 * each app runs in two processes under valgrind (`shared/tools/instructions.sh`) that differ only
 * in how many requests follow the warm-up; the difference of their counts ÷ the difference of
 * their requests is that app's instructions per request (loading, building the app and the
 * warm-up are in both counts and cancel).
 */

export type InstructionsApp = 'pipeline' | 'floor'

/** One process counted by instructions.sh: how many requests it sent after the warm-up, and the count. */
export interface CountedRun {
  requests: number
  instructions: number
}

export interface AppInstructions {
  app: InstructionsApp
  /** Instructions per request of each repetition (a low and a high run each), in the order they ran. */
  perRequest: number[]
  mean: number
}

export interface InstructionsFigure {
  pipeline: AppInstructions
  floor: AppInstructions
  /** pipeline mean ÷ floor mean. */
  ratio: number
}

/** The count instructions.sh prints on its last non-empty line; throws on anything else. */
export const parseInstructionCount = (stdout: string): number => {
  const last = stdout.trimEnd().split('\n').at(-1)?.trim() ?? ''
  if (!/^[0-9]+$/.test(last)) throw new Error(`instructions.sh did not end with a count: "${last.slice(0, 200)}"`)
  const count = Number(last)
  if (!Number.isSafeInteger(count)) throw new Error(`instructions.sh printed a count too large to add exactly: ${last}`)
  return count
}

/** (high − low) instructions ÷ (high − low) requests. */
export const instructionsPerRequest = (low: CountedRun, high: CountedRun): number => {
  const requests = high.requests - low.requests
  if (!(requests > 0)) throw new Error(`the high run must send more requests than the low one (${high.requests} vs ${low.requests})`)
  return (high.instructions - low.instructions) / requests
}

const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length)

/** One app's repetitions, each a (low, high) pair of runs. */
export const appInstructions = (app: InstructionsApp, repetitions: ReadonlyArray<{ low: CountedRun; high: CountedRun }>): AppInstructions => {
  const perRequest = repetitions.map(({ low, high }) => instructionsPerRequest(low, high))
  return { app, perRequest, mean: mean(perRequest) }
}

export const instructionsFigure = (pipeline: AppInstructions, floor: AppInstructions): InstructionsFigure => ({
  pipeline,
  floor,
  ratio: pipeline.mean / floor.mean,
})

const thousands = (x: number): string => (Number.isFinite(x) ? `${(x / 1e3).toFixed(1)}k` : '-')

/** The section's table: one row per app, then the ratio. */
export const formatInstructionsTable = (figure: InstructionsFigure): string => {
  const row = (a: AppInstructions): string[] => [a.app === 'floor' ? 'floor (bare Hono)' : 'pipeline (createApp)', a.perRequest.map(thousands).join(', '), thousands(a.mean)]
  const ratio = Number.isFinite(figure.ratio) ? `${figure.ratio.toFixed(2)}×` : '-'
  return formatTable(['app (1 instance, warm)', 'instr/req per repetition', 'mean instr/req'], [row(figure.pipeline), row(figure.floor), ['pipeline ÷ floor', '', ratio]], ['left', 'right', 'right'])
}
