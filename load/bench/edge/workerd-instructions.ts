import { execFileSync } from 'node:child_process'
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { wranglerConfig } from '../../../dev/workerd.ts'
import { freePort } from '../../../test/support/ports.ts'
import { positiveInt } from '../../harness/env.ts'
import { onCleanup, spawnChild } from '../../harness/processes.ts'
import { ROOT } from '../../harness/servers.ts'
import { formatTable } from '../../harness/table.ts'
import { type RatioTarget, type Verdict, formatVerdicts, judge } from '../../harness/verdict.ts'
import { INSTRUCTIONS_SH } from './instructions-run.ts'
import { instructionsPerRequest, parseInstructionCount } from './instructions.ts'
import { startBenchBackend } from './versus-peer.ts'
import { PREDICT_PATH, WARM_USER, predictBody } from './workload.ts'

/**
 * The edge and the peer worker end to end in workerd, counted in instructions (valgrind's
 * callgrind through shared/tools/instructions.sh): the figure beside the CPU-time verdicts that
 * does not move with the neighbours. Each worker runs in `workerd serve` itself (the binary, on a
 * one-module config with wrangler.toml's compatibility date), in front of the one real backend;
 * a process serves a warm-up and then `low` or `high` more predicts, and (high − low) ÷ the
 * difference in predicts is the worker's instructions per predict: workerd's start, the
 * bundle's evaluation and the JIT's first compiles are in both counts and cancel.
 */

// The binary itself: node_modules/workerd/bin/workerd is a Node launcher, which valgrind would count instead.
export const WORKERD = join(ROOT, 'node_modules/@cloudflare/workerd-linux-64/bin/workerd')

export type CountedWorker = 'edge' | 'peer'

export interface WorkerdInstructionsSettings {
  warmup: number
  low: number
  high: number
  repetitions: number
  connections: number
}

/** Env: BENCH_WORKERD_INSTRUCTIONS_WARMUP (1500), _LOW (200), _HIGH (1200), _REPETITIONS (3), _CONNECTIONS (4). */
export const workerdInstructionsSettings = (): WorkerdInstructionsSettings => ({
  warmup: positiveInt('BENCH_WORKERD_INSTRUCTIONS_WARMUP', 1_500),
  low: positiveInt('BENCH_WORKERD_INSTRUCTIONS_LOW', 200),
  high: positiveInt('BENCH_WORKERD_INSTRUCTIONS_HIGH', 1_200),
  repetitions: positiveInt('BENCH_WORKERD_INSTRUCTIONS_REPETITIONS', 3),
  connections: positiveInt('BENCH_WORKERD_INSTRUCTIONS_CONNECTIONS', 4),
})

/** A capnp string literal: JSON's escapes, which capnp reads alike for printable ASCII. */
export const capnpString = (text: string): string => {
  if (!/^[\x20-\x7e]*$/.test(text)) throw new Error(`a binding text outside printable ASCII: ${text.slice(0, 40)}`)
  return JSON.stringify(text)
}

/** workerd's config for one ES module worker on 127.0.0.1:`port`, with text bindings, allowed to call a backend on this machine. */
export const workerdConfig = (port: number, { compatibilityDate, compatibilityFlags }: { compatibilityDate: string; compatibilityFlags: readonly string[] }, bindings: Readonly<Record<string, string>>): string => `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = ${capnpString(compatibilityDate)},
  compatibilityFlags = [${compatibilityFlags.map(capnpString).join(', ')}],
  bindings = [${Object.entries(bindings).map(([name, value]) => `(name = ${capnpString(name)}, text = ${capnpString(value)})`).join(', ')}],
);
`

/** A directory holding `bundle` as worker.js and workerd's config.capnp for it on 127.0.0.1:`port`; answers the config's path. */
export const workerdDirectory = async (bundle: string, bindings: Readonly<Record<string, string>>, port: number): Promise<string> => {
  const dir = await mkdtemp(join(tmpdir(), 'bench-edge-workerd-'))
  onCleanup(() => rm(dir, { recursive: true, force: true }))
  await copyFile(bundle, join(dir, 'worker.js'))
  await writeFile(join(dir, 'config.capnp'), workerdConfig(port, wranglerConfig(), bindings))
  return join(dir, 'config.capnp')
}

/** A worker to count: its bundle and which bindings it takes (the edge's or the peer worker's). */
export interface CountedBundle {
  name: string
  bundle: string
  kind: CountedWorker
}

interface Job {
  contender: CountedBundle
  repetition: number
  requests: number
}

/** One workerd under callgrind: `warmup` predicts, then `requests` more, `connections` at a time; then SIGTERM to workerd. */
const count = async (bundle: string, bindings: Readonly<Record<string, string>>, key: string, requests: number, settings: WorkerdInstructionsSettings): Promise<number> => {
  const port = await freePort()
  const config = await workerdDirectory(bundle, bindings, port)
  const child = spawnChild('bash', [INSTRUCTIONS_SH, WORKERD, 'serve', config], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.process.stdout?.on('data', (d: Buffer) => (stdout += d.toString()))
  const body = predictBody(1, WARM_USER)
  const predict = async (): Promise<void> => {
    const res = await fetch(`http://127.0.0.1:${port}${PREDICT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`workerd answered ${res.status}: ${text.slice(0, 300)}`)
  }
  // workerd starts in seconds under valgrind: the first predict waits for it.
  for (const started = Date.now(); ; ) {
    try {
      await predict()
      break
    } catch (err) {
      if (Date.now() - started > 180_000 || child.process.exitCode !== null) throw err
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
  const run = async (n: number): Promise<void> => {
    let sent = 0
    await Promise.all(Array.from({ length: settings.connections }, async () => {
      while (sent++ < n) await predict()
    }))
  }
  await run(settings.warmup)
  await run(requests)
  // instructions.sh prints the count once valgrind ends: the signal goes to workerd (valgrind's process), not to the script.
  for (const pid of execFileSync('pgrep', ['-P', String(child.process.pid)]).toString().trim().split('\n')) process.kill(Number(pid), 'SIGTERM')
  await child.exited
  return parseInstructionCount(stdout)
}

export interface WorkerInstructions {
  name: string
  /** Instructions per predict of each repetition. */
  perPredict: number[]
  /**
   * The fewest: a GC cycle or a recompile landing in one count only adds work, so the least a
   * repetition needed is the worker's steady cost (one such repetition read 1.7× its twin).
   */
  least: number
}

/**
 * Each contender `repetitions` times with `low` and `high` predicts, two processes at a time
 * (valgrind runs a process's threads one at a time, so two use the two cores).
 */
export const countContenders = async (
  contenders: readonly CountedBundle[],
  settings: WorkerdInstructionsSettings,
  progress: (message: string) => void,
): Promise<WorkerInstructions[]> => {
  const backend = await startBenchBackend()
  try {
    const jobs: Job[] = []
    for (let repetition = 0; repetition < settings.repetitions; repetition++) {
      for (const contender of contenders) for (const requests of [settings.low, settings.high]) jobs.push({ contender, repetition, requests })
    }
    const counts = new Map<Job, number>()
    let next = 0
    const lane = async (): Promise<void> => {
      while (next < jobs.length) {
        const job = jobs[next++]!
        counts.set(job, await count(job.contender.bundle, backend.bindings[job.contender.kind], backend.key, job.requests, settings))
        progress(`workerd instructions: ${counts.size}/${jobs.length} (${job.contender.name}, repetition ${job.repetition + 1}, ${job.requests} predicts: ${counts.get(job)})`)
      }
    }
    await Promise.all([lane(), lane()])
    return contenders.map((contender) => {
      const perPredict = Array.from({ length: settings.repetitions }, (_, repetition) => {
        const run = (requests: number) => ({ requests, instructions: counts.get(jobs.find((j) => j.contender === contender && j.repetition === repetition && j.requests === requests)!)! })
        return instructionsPerRequest(run(settings.low), run(settings.high))
      })
      return { name: contender.name, perPredict, least: Math.min(...perPredict) }
    })
  } finally {
    await backend.server.stop()
  }
}

export interface WorkerdInstructionsResult {
  settings: WorkerdInstructionsSettings
  workers: WorkerInstructions[]
  /** The first worker's against the second's, with a bound for bench:edge's edge ÷ peer. */
  verdict: Verdict
}

/** The edge and the peer worker (bench:edge's section). */
export const measureWorkerdInstructions = async (bundles: Readonly<Record<CountedWorker, string>>, settings: WorkerdInstructionsSettings, progress: (message: string) => void): Promise<WorkerdInstructionsResult> => {
  const workers = await countContenders([{ name: 'edge', bundle: bundles.edge, kind: 'edge' }, { name: 'peer', bundle: bundles.peer, kind: 'peer' }], settings, progress)
  return { settings, workers, verdict: instructionsVerdict(workers, { name: 'edge ÷ peer worker in workerd: instructions per predict', unit: 'instr', comparator: '≤', target: 1.2 }) }
}

const millions = (x: number): string => (Number.isFinite(x) ? `${(x / 1e6).toFixed(2)} M` : '-')

/**
 * The first worker's least ÷ the second's against `target`; the noise column holds each side's
 * least ÷ its most, the spread of its repetitions.
 */
export const instructionsVerdict = ([a, b]: readonly WorkerInstructions[], target: RatioTarget): Verdict =>
  judge(target, a?.least, b?.least, { a: a && Math.max(...a.perPredict), b: b && Math.max(...b.perPredict) })

export const formatWorkerdInstructions = ({ settings, workers, verdict }: WorkerdInstructionsResult): string => [
  formatTable(
    ['worker in workerd (valgrind)', 'instructions per predict, by repetition', 'least'],
    workers.map((w) => [w.name, w.perPredict.map(millions).join(', '), millions(w.least)]),
    ['left', 'right', 'right'],
  ),
  '',
  formatVerdicts([{ node: '-', verdicts: [verdict] }]),
  '',
  `Instructions per predict end to end in workerd: each worker's bundle in \`workerd serve\` under valgrind's callgrind (shared/tools/instructions.sh), in front of the real backend (not counted);`,
  `  ${settings.warmup} warm-up predicts, then ${settings.low} or ${settings.high} more, ${settings.connections} at a time; (count with ${settings.high} − count with ${settings.low}) ÷ ${settings.high - settings.low}; ${settings.repetitions} repetitions, judged on`,
  `  each worker's least (a GC cycle or a recompile in one count only adds work); noise here = a side's least ÷ its most.`,
  `  Every thread of workerd is counted (its HTTP, the V8 compiler's background work, GC). A count, not time: cache misses and a contended core cost nothing here, so it reads flatter than CPU time.`,
  `  Env: BENCH_WORKERD_INSTRUCTIONS_WARMUP, _LOW, _HIGH, _REPETITIONS, _CONNECTIONS; skipped with the other instruction counts (BENCH_INSTRUCTIONS=0).`,
].join('\n')
