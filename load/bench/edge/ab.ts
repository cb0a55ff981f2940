import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, symlink } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { cleanUp, installSignalHandlers, interrupted, onCleanup } from '../../harness/processes.ts'
import { ROOT } from '../../harness/servers.ts'
import { formatVerdicts } from '../../harness/verdict.ts'
import { bundleWorker } from './bundle.ts'
import { countContenders, formatWorkerdInstructions, instructionsVerdict, workerdInstructionsSettings } from './workerd-instructions.ts'
import { type Contender, type FigureTarget, formatRows, measureContenders, verdictsOf, versusPeerSettings } from './versus-peer.ts'

/**
 * Two builds of the edge side by side in workerd, each beside its duplicate, in front of one
 * backend: `npx tsx load/bench/edge/ab.ts <a> <b>`, each a commit (`HEAD~1`, a hash) or `.` for
 * the working tree. What a change to the worker's hot path buys, judged on ratios of one run.
 * Env as `bench:edge`'s edge-vs-peer section: BENCH_PEER_ROUNDS, BENCH_PEER_DURATION_S, BENCH_WARMUP_S, BENCH_CONNECTIONS.
 * AB_INSTRUCTIONS=1 counts instructions per predict under valgrind instead (load/bench/edge/workerd-instructions.ts,
 * its BENCH_WORKERD_INSTRUCTIONS_* env): no duplicates needed, a count does not move with the neighbours.
 */
/** Whether b is at least as cheap and as fast as a; the noise column says whether the difference is more than noise. */
const TARGETS: readonly FigureTarget[] = [
  { figure: 'cpuUs', name: 'b ÷ a: CPU µs per predict', unit: 'µs', comparator: '≤', target: 1 },
  { figure: 'reqPerSec', name: 'b ÷ a: req/s', unit: 'req/s', comparator: '≥', target: 1 },
  { figure: 'p50Ms', name: 'b ÷ a: p50', unit: 'ms', comparator: '≤', target: 1 },
]

/** The edge bundled from `ref`: the working tree, or that commit's files beside this checkout's node_modules. */
const bundleRef = async (ref: string): Promise<string> => {
  if (ref === '.') return bundleWorker()
  const tree = await mkdtemp(join(tmpdir(), 'bench-edge-ab-'))
  onCleanup(() => rm(tree, { recursive: true, force: true }))
  execFileSync('sh', ['-c', `git archive "$1" | tar -x -C "$2"`, 'sh', ref, tree], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
  await symlink(join(ROOT, 'node_modules'), join(tree, 'node_modules'))
  return bundleWorker('edge/worker.ts', tree)
}

const main = async (): Promise<void> => {
  installSignalHandlers()
  const [refA, refB] = process.argv.slice(2)
  if (!refA || !refB) throw new Error('usage: ab.ts <a> <b> (commits, or . for the working tree)')
  const load0 = loadavg()
  try {
    const bundles = { a: await bundleRef(refA), b: await bundleRef(refB) }
    if (process.env.AB_INSTRUCTIONS === '1') {
      const settings = workerdInstructionsSettings()
      const workers = await countContenders([{ name: 'a', bundle: bundles.a, kind: 'edge' }, { name: 'b', bundle: bundles.b, kind: 'edge' }], settings, (m) => process.stderr.write(`${m}\n`))
      const verdict = instructionsVerdict([workers[1]!, workers[0]!], { name: 'b ÷ a: instructions per predict', unit: 'instr', comparator: '≤', target: 1 })
      process.stdout.write(`a = ${refA}, b = ${refB}\n${formatWorkerdInstructions({ settings, workers, verdict })}\n`)
      return
    }
    const contenders = ({ bindings }: { bindings: { edge: Record<string, string> } }): Contender[] =>
      (['a', 'b', 'a (dup)', 'b (dup)'] as const).map((name) => ({ name, bundle: bundles[name[0] as 'a' | 'b'], bindings: bindings.edge }))
    const rows = await measureContenders(versusPeerSettings(), contenders, (m) => process.stderr.write(`${m}\n`))
    const verdicts = verdictsOf(TARGETS, Object.fromEntries(rows.map((r) => [r.name, r.figures])), 'b', 'a')
    process.stdout.write([
      `a = ${refA}, b = ${refB}`,
      formatRows(rows),
      '',
      formatVerdicts([{ node: '-', verdicts }]),
      '',
      `Load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at end ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} cores.`,
    ].join('\n') + '\n')
  } finally {
    await cleanUp()
  }
}

main().catch((err: unknown) => {
  if (interrupted()) return
  process.stderr.write(`edge a/b failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
