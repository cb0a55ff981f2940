import { readFile, readdir, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { gzipSync } from 'node:zlib'
import { Miniflare } from 'miniflare'
import { bundledWorkerOptions } from '../../../dev/workerd.ts'
import { processCpuMicros } from '../../harness/cpu.ts'
import { positiveInt } from '../../harness/env.ts'
import { percentile } from '../../harness/percentile.ts'
import { formatTable } from '../../harness/table.ts'
import { findWorkerdPid } from '../../harness/workerd-pid.ts'
import { bundleWorker } from './bundle.ts'

/** Issue 34's bound on what a deploy uploads: the sum of the Worker's modules, uncompressed. */
export const BUNDLE_LIMIT_BYTES = 1_000_000

/** The floor the edge's startup is read beside: bench:edge's minimal peer worker. */
export const STARTUP_FLOOR_ENTRY = 'load/bench/edge/peer/worker.ts'

export interface BundleSize {
  /** Every module the deploy uploads (the entry and any additional module), uncompressed. */
  totalBytes: number
  entryBytes: number
  gzipBytes: number
}

/** One fresh workerd: Miniflare `new` → `ready`, then the first answer, by wall clock and by workerd's own CPU. */
export interface StartupSample {
  readyMs: number
  firstAnswerMs: number
  /** workerd's CPU from its start to the first answer (its own boot included, the same for both workers). */
  cpuMs: number
}

export interface WorkerStartup {
  name: string
  size: BundleSize
  samples: StartupSample[]
}

/** The modules in a `wrangler deploy --dry-run --outdir` folder (source maps and its README are not uploaded as modules). */
const isModule = (file: string): boolean => /\.(m?js|cjs|wasm)$/.test(file)

/** Sizes of what a deploy of the bundle at `entry` (the path bundleWorker answers) uploads. */
export const bundleSize = async (entry: string): Promise<BundleSize> => {
  const dir = dirname(entry)
  const modules = (await readdir(dir)).filter(isModule)
  const bytes = await Promise.all(modules.map(async (file) => (await stat(join(dir, file))).size))
  const contents = await Promise.all(modules.map((file) => readFile(join(dir, file))))
  return {
    totalBytes: bytes.reduce((a, b) => a + b, 0),
    entryBytes: (await stat(entry)).size,
    gzipBytes: contents.reduce((sum, c) => sum + gzipSync(c).length, 0),
  }
}

/** The workers' own log lines (the edge logs each request) would interleave with the tables: errors only. */
const quiet = (level: string, message: string): void => {
  if (level === 'error') process.stderr.write(`${message}\n`)
}

/** Starts the bundle in a fresh workerd, asks `path` once, and stops it. */
const startOnce = async (bundle: string, path: string): Promise<StartupSample> => {
  const started = performance.now()
  const mf = new Miniflare(await bundledWorkerOptions({ bundle, bindings: {}, host: '127.0.0.1', port: 0, onLog: quiet }))
  try {
    await mf.ready
    const ready = performance.now()
    const response = await mf.dispatchFetch(`http://127.0.0.1${path}`)
    await response.arrayBuffer()
    const answered = performance.now()
    const workerd = findWorkerdPid(process.pid)
    return { readyMs: ready - started, firstAnswerMs: answered - ready, cpuMs: workerd === undefined ? Number.NaN : processCpuMicros(workerd) / 1000 }
  } finally {
    await mf.dispose()
  }
}

/**
 * Bundles the edge and the floor as a deploy would, then starts each `rounds` times in a fresh
 * workerd, alternating (edge, floor, edge, ...) so a slow spell of the shared machine lands on both.
 * The edge is asked its liveness route, the floor a path it answers 404: each answer is the
 * worker's first request, after module evaluation.
 */
export const measureStartup = async (rounds = positiveInt('BENCH_STARTUP_ROUNDS', 3)): Promise<WorkerStartup[]> => {
  const workers = [
    { name: 'edge', bundle: await bundleWorker(), path: '/healthz' },
    { name: 'floor', bundle: await bundleWorker(STARTUP_FLOOR_ENTRY), path: '/startup-probe' },
  ]
  const results = await Promise.all(workers.map(async ({ name, bundle }) => ({ name, size: await bundleSize(bundle), samples: [] as StartupSample[] })))
  for (let round = 0; round < rounds; round++) {
    for (const [i, { bundle, path }] of workers.entries()) results[i].samples.push(await startOnce(bundle, path))
  }
  return results
}

const median = (values: readonly number[]): number => percentile([...values].sort((a, b) => a - b), 50)
const kb = (bytes: number): string => `${(bytes / 1000).toFixed(0)} KB`
const ms = (value: number): string => value.toFixed(1)
const ratio = (a: number, b: number): string => (b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '-')

/** The startup table (medians), edge ÷ floor under each column, and the bundle verdict. */
export const formatStartup = (workers: readonly WorkerStartup[]): string => {
  const rows = workers.map(({ name, size, samples }) => ({
    name,
    size,
    ready: median(samples.map((s) => s.readyMs)),
    first: median(samples.map((s) => s.firstAnswerMs)),
    cpu: median(samples.map((s) => s.cpuMs)),
    n: samples.length,
  }))
  const [edge, floor] = rows
  const table = formatTable(
    ['worker', 'modules', 'entry', 'gzip', 'starts', 'new→ready ms', 'first answer ms', 'workerd CPU ms'],
    [
      ...rows.map((r) => [r.name, kb(r.size.totalBytes), kb(r.size.entryBytes), kb(r.size.gzipBytes), String(r.n), ms(r.ready), ms(r.first), ms(r.cpu)]),
      ...(edge && floor
        ? [['edge ÷ floor', ratio(edge.size.totalBytes, floor.size.totalBytes), ratio(edge.size.entryBytes, floor.size.entryBytes), ratio(edge.size.gzipBytes, floor.size.gzipBytes), '', ratio(edge.ready, floor.ready), ratio(edge.first, floor.first), ratio(edge.cpu, floor.cpu)]]
        : []),
    ],
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
  const verdict = edge
    ? `${edge.size.totalBytes <= BUNDLE_LIMIT_BYTES ? 'PASS' : 'MISS'}  edge bundle ≤ ${kb(BUNDLE_LIMIT_BYTES)} uncompressed (all modules a deploy uploads): ${kb(edge.size.totalBytes)}`
    : 'MISS  edge bundle: not measured'
  const legend = [
    `Worker startup: each worker bundled by wrangler deploy --dry-run (wrangler.toml's build settings), started in a fresh workerd by Miniflare, edge and floor (${STARTUP_FLOOR_ENTRY}) in turn; medians.`,
    '  modules: every module a deploy uploads; new→ready: Miniflare constructed until ready (workerd up, modules evaluated); first answer: the first request (edge GET /healthz, floor a 404);',
    "  workerd CPU: the workerd process's CPU from its start to the first answer, at the kernel's 10 ms tick (its own boot is in both rows). Rounds: BENCH_STARTUP_ROUNDS.",
  ]
  return [table, ...legend, verdict].join('\n')
}
