import { accessSync, constants } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { cpus, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { positiveInt } from '../../harness/env.ts'
import { onCleanup, runToEnd } from '../../harness/processes.ts'
import { ROOT } from '../../harness/servers.ts'
import { appInstructions, instructionsFigure, parseInstructionCount, type CountedRun, type InstructionsApp, type InstructionsFigure } from './instructions.ts'

/**
 * `bench:edge`'s instructions section: load/bench/edge/instructions-child.ts, pre-bundled once with
 * esbuild (no tsx loader in the counted process: under valgrind it tripled the start-up and
 * transpiled in the same process), run under `shared/tools/instructions.sh` on the bench's own
 * Node, with a low and a high request count per app and repetition.
 */

export const INSTRUCTIONS_SH = join(ROOT, '../shared/tools/instructions.sh')

export interface InstructionsSettings {
  /** Requests after the warm-up in the low and the high run. */
  low: number
  high: number
  warmup: number
  repetitions: number
}

export const readInstructionsSettings = (): InstructionsSettings => ({
  low: positiveInt('BENCH_INSTRUCTIONS_LOW', 200),
  high: positiveInt('BENCH_INSTRUCTIONS_HIGH', 3_200),
  warmup: positiveInt('BENCH_INSTRUCTIONS_WARMUP', 1_000),
  repetitions: positiveInt('BENCH_INSTRUCTIONS_REPETITIONS', 2),
})

const onPath = (command: string): boolean =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK)
      return true
    } catch {
      return false
    }
  })

/**
 * Whether to run the section: `BENCH_INSTRUCTIONS=0` skips it, `1` insists (a missing valgrind is
 * then an error); by default it runs when valgrind is on PATH. Answers the reason when it does not.
 */
export const instructionsGate = (): { run: true } | { run: false; reason: string } => {
  const setting = process.env.BENCH_INSTRUCTIONS ?? ''
  if (setting === '0') return { run: false, reason: 'Instructions per request: skipped (BENCH_INSTRUCTIONS=0).' }
  if (setting !== '' && setting !== '1') throw new Error(`BENCH_INSTRUCTIONS must be 0 or 1, got "${setting}"`)
  const missing = !onPath('valgrind')
    ? 'valgrind is not on PATH (install it: apt-get install -y valgrind)'
    : !onPath('bash') ? 'bash is not on PATH' : undefined
  let script: string | undefined
  try {
    accessSync(INSTRUCTIONS_SH, constants.R_OK)
  } catch {
    script = `${INSTRUCTIONS_SH} is not there`
  }
  const reason = missing ?? script
  if (reason === undefined) return { run: true }
  if (setting === '1') throw new Error(`BENCH_INSTRUCTIONS=1 but ${reason}`)
  return { run: false, reason: `Instructions per request: not measured, ${reason}; BENCH_INSTRUCTIONS=0 silences this line.` }
}

/**
 * Bundles the child for Node into one ESM file. Every `import.meta.url` in the repository's own
 * sources is replaced by that file's own URL (load/harness/servers.ts finds the repository root with it),
 * so the bundle may live in a temporary directory.
 */
const bundleChild = async (): Promise<string> => {
  const { build } = await import('esbuild')
  const outdir = await mkdtemp(join(tmpdir(), 'bench-edge-instructions-'))
  onCleanup(() => rm(outdir, { recursive: true, force: true }))
  const outfile = join(outdir, 'instructions-child.mjs')
  await build({
    entryPoints: [join(ROOT, 'load/bench/edge/instructions-child.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    outfile,
    logLevel: 'error',
    // CommonJS dependencies inside an ES module bundle still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __benchCreateRequire } from 'node:module'; const require = __benchCreateRequire(import.meta.url);" },
    plugins: [{
      name: 'own-import-meta-url',
      setup(b) {
        b.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
          if (path.includes('/node_modules/')) return undefined
          const source = await readFile(path, 'utf8')
          return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(path).href)), loader: 'ts' }
        })
      },
    }],
  })
  return outfile
}

interface Job {
  app: InstructionsApp
  repetition: number
  requests: number
}

/** Counts one process of the bundled child under instructions.sh. */
const count = async (node: string, bundle: string, job: Job, warmup: number): Promise<CountedRun> => {
  const stdout = await runToEnd(`instructions.sh on the ${job.app} child (${job.requests} requests)`, 'bash', [INSTRUCTIONS_SH, node, bundle], {
    cwd: ROOT,
    env: { ...process.env, INSTRUCTIONS_APP: job.app, INSTRUCTIONS_REQUESTS: String(job.requests), INSTRUCTIONS_WARMUP: String(warmup) },
  })
  return { requests: job.requests, instructions: parseInstructionCount(stdout) }
}

/**
 * Pipeline and floor, each `repetitions` times with `low` and `high` requests. The processes run
 * as many at a time as there are cores: valgrind runs a process's threads one at a time, and an
 * instruction count does not move with what else runs.
 */
export const measureInstructions = async (
  node: string,
  settings: InstructionsSettings,
  progress: (message: string) => void,
): Promise<InstructionsFigure> => {
  const bundle = await bundleChild()
  const jobs: Job[] = []
  for (let repetition = 0; repetition < settings.repetitions; repetition++) {
    for (const app of ['pipeline', 'floor'] as const) for (const requests of [settings.low, settings.high]) jobs.push({ app, repetition, requests })
  }
  const results = new Map<Job, CountedRun>()
  let next = 0
  let done = 0
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const job = jobs[next++]
      results.set(job, await count(node, bundle, job, settings.warmup))
      progress(`instructions: ${++done}/${jobs.length} (${job.app}, repetition ${job.repetition + 1}, ${job.requests} requests: ${results.get(job)!.instructions})`)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(cpus().length, jobs.length)) }, worker))
  const of = (app: InstructionsApp) =>
    appInstructions(app, Array.from({ length: settings.repetitions }, (_, repetition) => {
      const run = (requests: number) => results.get(jobs.find((j) => j.app === app && j.repetition === repetition && j.requests === requests)!)!
      return { low: run(settings.low), high: run(settings.high) }
    }))
  return instructionsFigure(of('pipeline'), of('floor'))
}

/** The lines bench:edge prints under the section's table. */
export const instructionsLegend = (node: string, settings: InstructionsSettings, figure: InstructionsFigure): string =>
  [
    `Instructions per request (valgrind callgrind via shared/tools/instructions.sh, on ${node}): the same apps as the in-process 1-instance warm and floor rows (load/bench/edge/pipeline.ts sampleCase),`,
    `  one process per count: ${settings.warmup} warm-up requests, then ${settings.low} or ${settings.high} more; (count with ${settings.high} − count with ${settings.low}) ÷ ${settings.high - settings.low}, ${settings.repetitions} repetitions, their mean.`,
    `  A count of work done, so it does not move with the neighbours; JIT tiering and GC are its noise (the repetitions' spread: measured 6–9% with these defaults, ~50% with 1,000 requests). It is not time: cache misses, the crypto`,
    `  pool's waits and a contended core cost nothing here, and costs both apps share (building each Request and its body stream, Response, Hono's routing) weigh the same in both,`,
    `  so pipeline ÷ floor (${Number.isFinite(figure.ratio) ? figure.ratio.toFixed(2) : '-'}×) is flatter than the wall-clock ratio. Judge on the workerd ratio; read this beside it.`,
    `  Env: BENCH_INSTRUCTIONS=0 skips (default: on when valgrind is on PATH), BENCH_INSTRUCTIONS_LOW=${settings.low} BENCH_INSTRUCTIONS_HIGH=${settings.high} BENCH_INSTRUCTIONS_WARMUP=${settings.warmup} BENCH_INSTRUCTIONS_REPETITIONS=${settings.repetitions}.`,
  ].join('\n')
