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
import { formatVerdicts, judge, type Verdict } from '../../harness/verdict.ts'
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

/** Issue 34's targets for the edge against the minimal peer worker, each beside its noise floor. */
export const peerVerdicts = (rows: Readonly<Partial<Record<PeerRowName, PeerFigures>>>): Verdict[] => {
  const { edge, peer } = rows
  const [edgeDup, peerDup] = [rows['edge (dup)'], rows['peer (dup)']]
  const pick = (f: PeerFigures | undefined, key: 'cpuUs' | 'reqPerSec' | 'p50Ms') => f?.[key]
  return [
    judge({ name: 'edge ÷ peer worker in workerd: CPU µs per predict', unit: 'µs', comparator: '≤', target: 1.2 }, pick(edge, 'cpuUs'), pick(peer, 'cpuUs'), { a: pick(edgeDup, 'cpuUs'), b: pick(peerDup, 'cpuUs') }),
    judge({ name: 'edge ÷ peer worker in workerd: req/s', unit: 'req/s', comparator: '≥', target: 0.85 }, pick(edge, 'reqPerSec'), pick(peer, 'reqPerSec'), { a: pick(edgeDup, 'reqPerSec'), b: pick(peerDup, 'reqPerSec') }),
    judge({ name: 'edge ÷ peer worker in workerd: p50', unit: 'ms', comparator: '≤', target: 1.2 }, pick(edge, 'p50Ms'), pick(peer, 'p50Ms'), { a: pick(edgeDup, 'p50Ms'), b: pick(peerDup, 'p50Ms') }),
  ]
}

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

/** The four rows, the verdicts with their noise floor, and how they were measured. */
export const formatVersusPeer = ({ settings, rows, verdicts }: VersusPeerResult): string => [
  formatTable(
    ['worker in workerd', 'req/s', 'req/s by run', 'p50 ms', 'p99 ms', 'workerd CPU µs/predict'],
    rows.map(({ name, figures: f }) => [name, fixed(f.reqPerSec, 0), f.runs.map((x) => x.toFixed(0)).join(' '), fixed(f.p50Ms, 1), fixed(f.p99Ms, 1), fixed(f.cpuUs, 0)]),
    ['left', 'right', 'right', 'right', 'right', 'right'],
  ),
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

interface Running {
  name: PeerRowName
  server: ServerProcess
  pid: number
  samples: PeerSample[]
}

/**
 * The edge and the minimal peer worker (load/bench/edge/peer/worker.ts), both bundled as a deploy
 * would and run by Miniflare in workerd, in front of one real backend (INFER_TOKEN on), the same
 * body and key; each twice, the four taking turns round after round.
 */
export const measureVersusPeer = async (
  settings: VersusPeerSettings,
  bundles: { edge: string; peer: string },
  progress: (message: string) => void,
): Promise<VersusPeerResult> => {
  const started: ServerProcess[] = []
  try {
    progress('edge vs peer: starting the backend')
    const backend = await within(60_000, 'the backend to listen', startServer('backend/server.ts', { MODEL_REPOSITORY, INFER_TOKEN }))
    started.push(backend)
    await waitReady(backend.url)
    const { key, entry } = await benchKey()
    const bindings = await bindingsFor(backend.url, entry)
    const running: Running[] = []
    for (const name of ROWS) {
      progress(`edge vs peer: starting ${name} in workerd`)
      const server = await within(60_000, `${name} to listen`, startServer('load/harness/workerd-host.ts', { EDGE_BUNDLE: name.startsWith('edge') ? bundles.edge : bundles.peer, EDGE_BINDINGS: JSON.stringify(name.startsWith('edge') ? bindings.edge : bindings.peer) }))
      started.push(server)
      const pid = server.child.process.pid === undefined ? undefined : findWorkerdPid(server.child.process.pid)
      if (pid === undefined) throw new Error(`${name}: no workerd process found under its host`)
      running.push({ name, server, pid, samples: [] })
    }
    const body = predictBody(1, WARM_USER)
    const headers = { authorization: `Bearer ${key}` }
    for (const row of running) {
      const res = await fetch(`${row.server.url}${PREDICT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`${row.name} answered ${res.status} when primed: ${text.slice(0, 300)}`)
    }
    const load = (row: Running, durationS: number) => runAutocannon({ url: `${row.server.url}${PREDICT_PATH}`, body, headers, connections: settings.connections, durationS })
    for (let round = 1; round <= settings.rounds; round++) {
      for (const row of turnOrder(running, round)) {
        progress(`edge vs peer: round ${round}/${settings.rounds}, ${row.name}`)
        await load(row, settings.warmupS)
        const before = processCpuMicros(row.pid)
        const result = await load(row, settings.durationS)
        const after = processCpuMicros(row.pid)
        assertAlive(row.server, `the ${row.name} run`)
        assertAlive(backend, `the ${row.name} run`)
        if (result.ok !== result.completed) throw new Error(`${row.name}: ${result.completed - result.ok} of ${result.completed} answers were not 2xx`)
        row.samples.push({ load: result, cpuUs: result.completed > 0 ? (after - before) / result.completed : Number.NaN })
      }
    }
    const rows = running.map(({ name, samples }) => ({ name, figures: figuresOf(samples) }))
    return { settings, rows, verdicts: peerVerdicts(Object.fromEntries(rows.map((r) => [r.name, r.figures]))) }
  } finally {
    await Promise.all(started.reverse().map((s) => s.stop()))
  }
}
