import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { runAutocannon, type LoadResult } from '../../harness/autocannon.ts'
import { processCpuMicros } from '../../harness/cpu.ts'
import { turnOrder } from '../../harness/order.ts'
import { median } from '../../harness/percentile.ts'
import { ROOT, assertAlive, startServer, waitReady, type ServerProcess } from '../../harness/servers.ts'
import { within } from '../../harness/processes.ts'
import { positiveInt } from '../../harness/env.ts'
import { formatTable } from '../../harness/table.ts'
import { formatVerdicts, judge, type RatioTarget, type Verdict } from '../../harness/verdict.ts'
import { findWorkerdPid } from '../../harness/workerd-pid.ts'
import type { KeyEntry } from '../../../edge/stores/keys/api-key.ts'
import { MODEL_REPOSITORY, PREDICT_PATH, WARM_USER, benchKey, creditRiskMetadata, predictBody } from './workload.ts'

/** The edge and the peer worker, each twice: every judged row beside its duplicate. */
export type PeerRowName = 'edge' | 'edge (dup)' | 'peer' | 'peer (dup)'
const ROWS: readonly PeerRowName[] = ['edge', 'peer', 'edge (dup)', 'peer (dup)']

/** One measured run of one worker. */
export interface PeerSample {
  load: LoadResult
  /** The worker's own workerd process, CPU time over the run ÷ completed requests. */
  cpuUs: number
}

/** A row's runs reduced to their medians. */
export interface PeerFigures {
  reqPerSec: number
  p50Ms: number
  p99Ms: number
  cpuUs: number
  runs: number[]
}

export const figuresOf = (samples: readonly PeerSample[]): PeerFigures => ({
  reqPerSec: median(samples.map((s) => s.load.reqPerSec)),
  p50Ms: median(samples.map((s) => s.load.p50Ms)),
  p99Ms: median(samples.map((s) => s.load.p99Ms)),
  cpuUs: median(samples.map((s) => s.cpuUs)),
  runs: samples.map((s) => s.load.reqPerSec),
})

/** A figure of a row and the bound its ratio is judged against. */
export type FigureTarget = RatioTarget & { figure: 'cpuUs' | 'reqPerSec' | 'p50Ms' }

/** Issue 34's targets for the edge against the minimal peer worker. */
const PEER_TARGETS: readonly FigureTarget[] = [
  { figure: 'cpuUs', name: 'edge ÷ peer worker in workerd: CPU µs per predict', unit: 'µs', comparator: '≤', target: 1.2 },
  { figure: 'reqPerSec', name: 'edge ÷ peer worker in workerd: req/s', unit: 'req/s', comparator: '≥', target: 0.85 },
  { figure: 'p50Ms', name: 'edge ÷ peer worker in workerd: p50', unit: 'ms', comparator: '≤', target: 1.2 },
]

/** Each target's ratio of row `a` to row `b`, beside each row's ratio to its duplicate (`<name> (dup)`). */
export const verdictsOf = (targets: readonly FigureTarget[], rows: Readonly<Partial<Record<string, PeerFigures>>>, a: string, b: string): Verdict[] =>
  targets.map(({ figure, ...target }) => judge(target, rows[a]?.[figure], rows[b]?.[figure], { a: rows[`${a} (dup)`]?.[figure], b: rows[`${b} (dup)`]?.[figure] }))

/** Issue 34's targets for the edge against the minimal peer worker, each beside its noise floor. */
export const peerVerdicts = (rows: Readonly<Partial<Record<PeerRowName, PeerFigures>>>): Verdict[] => verdictsOf(PEER_TARGETS, rows, 'edge', 'peer')

export interface VersusPeerSettings {
  rounds: number
  durationS: number
  warmupS: number
  connections: number
}

/** Env: BENCH_PEER_ROUNDS (3), BENCH_PEER_DURATION_S (8), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (16). */
export const versusPeerSettings = (): VersusPeerSettings => ({
  rounds: positiveInt('BENCH_PEER_ROUNDS', 3),
  durationS: positiveInt('BENCH_PEER_DURATION_S', 8),
  warmupS: positiveInt('BENCH_WARMUP_S', 2),
  connections: positiveInt('BENCH_CONNECTIONS', 16),
})

export interface VersusPeerResult {
  settings: VersusPeerSettings
  rows: Array<{ name: PeerRowName; figures: PeerFigures }>
  verdicts: Verdict[]
}

const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '-')

/** Each row's medians and its runs' req/s. */
export const formatRows = (rows: ReadonlyArray<{ name: string; figures: PeerFigures }>): string =>
  formatTable(
    ['worker in workerd', 'req/s', 'req/s by run', 'p50 ms', 'p99 ms', 'workerd CPU µs/predict'],
    rows.map(({ name, figures: f }) => [name, fixed(f.reqPerSec, 0), f.runs.map((x) => x.toFixed(0)).join(' '), fixed(f.p50Ms, 1), fixed(f.p99Ms, 1), fixed(f.cpuUs, 0)]),
    ['left', 'right', 'right', 'right', 'right', 'right'],
  )

/** The four rows, the verdicts with their noise floor, and how they were measured. */
export const formatVersusPeer = ({ settings, rows, verdicts }: VersusPeerResult): string => [
  formatRows(rows),
  '',
  formatVerdicts([{ node: '-', verdicts }]),
  '',
  `Edge vs peer: the edge (wrangler.toml's worker) and load/bench/edge/peer/worker.ts (SHA-256 key check, zod validation, one-hot encoding, the backend with a bearer, labels), each bundled by wrangler deploy --dry-run and run by Miniflare in its own workerd;`,
  `  one backend (INFER_TOKEN on) behind both; the same body (user ${WARM_USER}, one instance) and key; autocannon, ${settings.connections} connections, ${settings.warmupS} s warm-up + ${settings.durationS} s per run, the four rows taking turns for ${settings.rounds} rounds (each round starting one row later); cells are medians.`,
  `  CPU: the worker's own workerd process (/proc/<pid>/stat, all threads) ÷ answered predicts. (dup): a second workerd with the same worker; noise = a side ÷ its duplicate.`,
].join('\n')

export const INFER_TOKEN = 'bench-edge-infer-token-0123456789'

/** Each worker's bindings in front of the backend at `backendUrl`, accepting the key `entry` describes. */
export const bindingsFor = async (backendUrl: string, entry: KeyEntry): Promise<{ edge: Record<string, string>; peer: Record<string, string> }> => {
  const seed = JSON.parse(await readFile(join(ROOT, 'edge/stores/features/demo-seed.json'), 'utf8')) as { user?: Record<string, unknown> }
  return {
    edge: { BACKEND_URL: backendUrl, INFER_TOKEN, API_KEYS: JSON.stringify([entry]), MAX_INSTANCES: '64', ALLOWED_ORIGINS: '' },
    peer: { BACKEND_URL: backendUrl, INFER_TOKEN, KEY_HASHES: JSON.stringify([entry.hash]), MODEL: JSON.stringify(await creditRiskMetadata()), USER_FEATURES: JSON.stringify(seed.user ?? {}) },
  }
}

/** A worker the rounds measure: a bundle and the bindings it runs with. */
export interface Contender {
  name: string
  bundle: string
  bindings: Record<string, string>
}

/** The real backend (INFER_TOKEN on) the workers call, the bench key they accept, and each kind's bindings for it. */
export interface BenchBackend {
  server: ServerProcess
  key: string
  bindings: { edge: Record<string, string>; peer: Record<string, string> }
}

/** Starts the backend on the bundled models and issues the bench key; the caller stops `server`. */
export const startBenchBackend = async (): Promise<BenchBackend> => {
  const server = await within(60_000, 'the backend to listen', startServer('backend/server.ts', { MODEL_REPOSITORY, INFER_TOKEN }))
  try {
    await waitReady(server.url)
    const { key, entry } = await benchKey()
    return { server, key, bindings: await bindingsFor(server.url, entry) }
  } catch (err) {
    await server.stop()
    throw err
  }
}

/** A worker bundle run by Miniflare in workerd of its own (`env`: more of workerd-host's settings), and that workerd's PID. */
export const startWorker = async (name: string, bundle: string, bindings: Record<string, string>, env: Record<string, string> = {}): Promise<{ server: ServerProcess; pid: number }> => {
  const server = await within(60_000, `${name} to listen`, startServer('load/harness/workerd-host.ts', { EDGE_BUNDLE: bundle, EDGE_BINDINGS: JSON.stringify(bindings), ...env }))
  const pid = server.child.process.pid === undefined ? undefined : findWorkerdPid(server.child.process.pid)
  if (pid === undefined) {
    await server.stop()
    throw new Error(`${name}: no workerd process found under its host`)
  }
  return { server, pid }
}

interface Running {
  name: string
  server: ServerProcess
  pid: number
  samples: PeerSample[]
}

/**
 * Workers in front of one real backend, each in its own workerd, answering the same body and key:
 * they take turns round after round (each round starting one later), each run after a warm-up.
 * `contenders` names them once the backend's bindings are known.
 */
export const measureContenders = async (
  settings: VersusPeerSettings,
  contenders: (backend: BenchBackend) => Contender[],
  progress: (message: string) => void,
): Promise<Array<{ name: string; figures: PeerFigures }>> => {
  const started: ServerProcess[] = []
  try {
    progress('starting the backend')
    const backend = await startBenchBackend()
    started.push(backend.server)
    const running: Running[] = []
    for (const { name, bundle, bindings } of contenders(backend)) {
      progress(`starting ${name} in workerd`)
      const { server, pid } = await startWorker(name, bundle, bindings)
      started.push(server)
      running.push({ name, server, pid, samples: [] })
    }
    const body = predictBody(1, WARM_USER)
    const headers = { authorization: `Bearer ${backend.key}` }
    for (const row of running) {
      const res = await fetch(`${row.server.url}${PREDICT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`${row.name} answered ${res.status} when primed: ${text.slice(0, 300)}`)
    }
    const load = (row: Running, durationS: number) => runAutocannon({ url: `${row.server.url}${PREDICT_PATH}`, body, headers, connections: settings.connections, durationS })
    for (let round = 1; round <= settings.rounds; round++) {
      for (const row of turnOrder(running, round)) {
        progress(`round ${round}/${settings.rounds}, ${row.name}`)
        await load(row, settings.warmupS)
        const before = processCpuMicros(row.pid)
        const result = await load(row, settings.durationS)
        const after = processCpuMicros(row.pid)
        assertAlive(row.server, `the ${row.name} run`)
        assertAlive(backend.server, `the ${row.name} run`)
        if (result.ok !== result.completed) throw new Error(`${row.name}: ${result.completed - result.ok} of ${result.completed} answers were not 2xx`)
        row.samples.push({ load: result, cpuUs: result.completed > 0 ? (after - before) / result.completed : Number.NaN })
      }
    }
    return running.map(({ name, samples }) => ({ name, figures: figuresOf(samples) }))
  } finally {
    await Promise.all(started.reverse().map((s) => s.stop()))
  }
}

/**
 * The edge and the minimal peer worker (load/bench/edge/peer/worker.ts), both bundled as a deploy
 * would, each twice.
 */
export const measureVersusPeer = async (
  settings: VersusPeerSettings,
  bundles: { edge: string; peer: string },
  progress: (message: string) => void,
): Promise<VersusPeerResult> => {
  const contenders = ({ bindings }: BenchBackend): Contender[] =>
    ROWS.map((name) => (name.startsWith('edge') ? { name, bundle: bundles.edge, bindings: bindings.edge } : { name, bundle: bundles.peer, bindings: bindings.peer }))
  const rows = (await measureContenders(settings, contenders, (m) => progress(`edge vs peer: ${m}`))) as Array<{ name: PeerRowName; figures: PeerFigures }>
  return { settings, rows, verdicts: peerVerdicts(Object.fromEntries(rows.map((r) => [r.name, r.figures]))) }
}
