import { Command, Option } from 'commander'
import { UsageError } from '../../load/harness/args.ts'
import { SCENARIO_NAMES } from '../../load/scenarios/index.js'
import { UsageError as KeyUsageError } from '../../infra/keys/create-key.ts'

/**
 * `edge-infer`: every command of the project in one tree, parsed by commander. Entry points export
 * a function taking checked options; they are imported only when their command runs, so `--help`
 * never starts anything. npm scripts (`npm run load`, …) are aliases of these commands.
 */

/** The exit code of a command-line mistake (unknown flag, bad value), as the load tools always had. */
export const USAGE_EXIT = 2

const SCENARIO_HELP = `${SCENARIO_NAMES.join(', ')} (default steady)`

/** `edge-infer keys create` → "edge-infer keys create". */
export const commandPath = (command: Command): string => {
  const names: string[] = []
  for (let c: Command | null = command; c !== null; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/** The words runCli was given, for the command line a report names. */
let given: readonly string[] = []

const commandLine = (): string => ['edge-infer', ...given.map((a) => (/^[\w./:=-]+$/.test(a) ? a : JSON.stringify(a)))].join(' ')

/** A usage mistake found after parsing (a value out of range): one line, the usual exit code. */
const usageError = (command: Command, err: unknown): never => {
  if (err instanceof UsageError || err instanceof KeyUsageError) command.error(`error: ${err.message}`, { exitCode: USAGE_EXIT, code: 'edge-infer.usage' })
  throw err
}

const load = (): Command => new Command('load')
  .description('closed-loop load with SLA thresholds: plays a scenario against the edge at --target, or a local stack it starts and stops; exits 1 when the SLA is crossed')
  .option('--target <url>', "the edge's base URL (default: a local stack started for the run)")
  .option('--key <key>', 'the API key for --target (default: API_KEY)')
  .option('--scenario <name>', SCENARIO_HELP)
  .option('--duration <s>', "seconds in all, the shape stretched to fit (default: the scenario's)")
  .option('--rate <r>', "peak requests per second (default: the scenario's)")
  .option('--connections <n>', 'autocannon connections, at most (default 16)')
  .option('--model <name>', 'the model to predict with (default credit-risk)')
  .option('--seed <n>', 'seed of the generated payloads (default 1)')
  .option('--known-ids <a,b,c>', "entity ids the target's feature store holds (default: the local seed's)")
  .option('--sla-p95 <ms>', "override the scenario's p95 threshold")
  .option('--sla-p99 <ms>', "override the scenario's p99 threshold")
  .option('--max-error-rate <x>', "override the scenario's error budget (a fraction)")
  .addHelpText('after', `
Without --target, a local stack (backend + edge in workerd) is started and stopped for the run.
Exits 0 when the SLA held, 1 when a threshold was crossed, 2 on a usage error.`)
  .action(async (flags, command: Command) => {
    const { loadArgs } = await import('../../load/run/args.ts')
    let args
    try {
      args = loadArgs(flags)
    } catch (err) {
      usageError(command, err)
    }
    const { runLoad } = await import('../../load/run/main.ts')
    await exitWith('load', runLoad(args!))
  })

const capacity = (): Command => new Command('capacity')
  .description('open-loop capacity: the highest fixed arrival rate at which p95 and errors hold the SLA, for the backend and the edge of a local stack, or the edge at --target; writes a report and charts into --out')
  .option('--target <url>', "the edge's base URL (default: a local stack started for the run)")
  .option('--key <key>', 'the API key for --target (default: API_KEY)')
  .option('--sla-p95 <ms>', 'the p95 threshold (default 50)')
  .option('--max-error-rate <x>', 'the error budget, a fraction (default 0.001)')
  .option('--step-s <s>', 'seconds per step (default 3)')
  .option('--start-rate <r>', 'the first step, requests per second (default 100)')
  .option('--max-steps <n>', 'steps at most (default 16)')
  .option('--tolerance <f>', 'bisect until the bracket is this fraction wide (default 0.1)')
  .option('--max-in-flight <n>', 'requests in flight at most; arrivals over it are failures (default 256)')
  .option('--model <name>', 'the model (default credit-risk)')
  .option('--out <dir>', 'where the report and charts go (default load/reports)')
  .addHelpText('after', `
Steps a fixed arrival rate up (x2) until the SLA breaks, then bisects to --tolerance; a broken step
is confirmed by a second run. Without --target: a local stack it starts and stops, measured directly
and through the edge, with the server processes' CPU per request and the backend's batch sizes.`)
  .action(async (flags, command: Command) => {
    const { capacityArgs, runCapacity } = await import('../../load/capacity/main.ts')
    let args
    try {
      args = capacityArgs(flags)
    } catch (err) {
      usageError(command, err)
    }
    await exitWith('capacity', runCapacity(args!, commandLine()))
  })

const simulate = (): Command => new Command('simulate')
  .description('the GPU tier under a day of traffic with the committed KEDA settings and variations; prints the comparison and writes autoscale-<date>.md and .svg into --out')
  .option('--trace <file>', 'a recorded trace (default: a generated diurnal one)')
  .option('--sla-p95 <ms>', 'the p95 SLA (default 50)')
  .option('--peak <rps>', 'the peak rate, requests per second (default 12000; scales a recorded trace)')
  .option('--start-delay <s>', 'seconds from scale-up to a ready replica (default 60)')
  .option('--seed <n>', 'seed of the generated trace (default 1)')
  .option('--hours <h>', 'hours of generated trace (default 8)')
  .option('--start <hour>', 'hour of the day the generated trace starts at (default: centred on the 14:00 peak)')
  .addOption(new Option('--routing <how>', 'how requests pick a replica').choices(['random', 'round-robin', 'least-loaded']).default('random'))
  .option('--out <dir>', 'where the report and chart go (default load/reports)')
  .action(async (flags, command: Command) => {
    const { simulate: run } = await import('../../load/sim/main.ts')
    try {
      run(flags, commandLine())
    } catch (err) {
      usageError(command, err)
    }
  })

const start = (): Command => new Command('start')
  .description('the local stack in the foreground: the backend and the edge in workerd, Ctrl-C stops both (npm start)')
  .option('--fresh-key', 'replace the local API key kept in .dev.keys.json with a new one')
  // dev/start.ts reads --fresh-key from process.argv itself (npm start runs it as a file).
  .action(async () => {
    await import('../../dev/start.ts')
  })

const demo = (): Command => new Command('demo')
  .description('demonstrations on a local stack')
  .addCommand(new Command('canary')
    .description('a rollout and three rollbacks as they happen, on a local stack with a scratch repository (about half a minute)')
    .option('--keep', 'leave the stack and its console up at the end, with the key printed, until Ctrl-C')
    .action(async (flags: { keep?: boolean }) => {
      const { runDemoCanary } = await import('../../dev/demo-canary.ts')
      await runDemoCanary({ keep: flags.keep ?? false }).catch((err: unknown) => {
        process.stderr.write(`demo canary failed: ${err instanceof Error ? err.message : String(err)}\n`)
        process.exitCode = 1
      })
    }))

const bench = (): Command => {
  const entry = (name: string, description: string, path: () => Promise<unknown>) =>
    new Command(name).description(`${description} (settings from the environment: see the file's comment)`).action(async () => {
      await path()
    })
  return new Command('bench')
    .description('benchmarks of one tier each, with targets judged PASS/MISS')
    .addCommand(entry('backend', 'the backend beside its peers (load/bench/backend/main.ts)', () => import('../../load/bench/backend/main.ts')))
    .addCommand(entry('edge', "the edge pipeline's own cost per request, then end to end (load/bench/edge/main.ts)", () => import('../../load/bench/edge/main.ts')))
    .addCommand(entry('drift', 'how well the drift monitor tells drift from noise (load/bench/drift/main.ts)', () => import('../../load/bench/drift/main.ts')))
}

/** Exits with the run's code; a failure (not from Ctrl-C) is 1 with its stack. */
const exitWith = async (name: string, run: Promise<number>): Promise<void> => {
  const { interrupted } = await import('../../load/harness/processes.ts')
  try {
    process.exit(await run)
  } catch (err) {
    if (interrupted()) return
    process.stderr.write(`${name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  }
}

/**
 * Every command of the tree: `--help` prints its usage and exits 0; an unknown flag or a bad value
 * prints one line naming the command's help and exits 2, never a stack trace.
 */
export const strict = (command: Command): Command => {
  command
    .configureOutput({
      outputError: (text, write) => write(`${text.trim().split('\n').map((l) => l.trim()).filter(Boolean).join(' ')} (see ${commandPath(command)} --help)\n`),
    })
    .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT))
    .allowExcessArguments(false)
  if (command.commands.length === 0) {
    // Commander checks required options before unknown ones; an unknown flag is the mistake to name.
    const parseOptions = command.parseOptions.bind(command)
    command.parseOptions = (args) => {
      const parsed = parseOptions(args)
      // --help is not among the parsed options: commander answers it after this.
      const flag = parsed.unknown.find((arg) => arg.startsWith('-') && arg !== '--help' && arg !== '-h')
      if (flag !== undefined) command.error(`error: unknown option '${flag}'`, { exitCode: USAGE_EXIT, code: 'commander.unknownOption' })
      return parsed
    }
  }
  for (const sub of command.commands) strict(sub)
  return command
}

/** The whole tree, every command made strict. */
export const buildProgram = async (): Promise<Command> => {
  const { keysCommand } = await import('./keys.ts')
  const { modelsCommand } = await import('../models/command.ts')
  const program = new Command('edge-infer')
    .description('edge-infer: serve ONNX models behind an edge worker. Each command has --help.')
    .addCommand(start())
    .addCommand(modelsCommand())
    .addCommand(keysCommand())
    .addCommand(load())
    .addCommand(capacity())
    .addCommand(simulate())
    .addCommand(demo())
    .addCommand(bench())
  return strict(program)
}

/** Parses `argv` (the words after `edge-infer`) and runs the command. */
export const runCli = async (argv: readonly string[]): Promise<void> => {
  given = argv
  const program = await buildProgram()
  try {
    await program.parseAsync([...argv], { from: 'user' })
  } catch (err) {
    // A command that could not do its work (a file that does not parse, Redis refusing): its
    // message in one line; a stack trace helps no one using the command.
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`)
    process.exit(1)
  }
}
