import { createInterface } from 'node:readline'
import { Redis } from '@upstash/redis'
import { runAutocannon, type LoadResult } from '../../harness/autocannon.ts'
import { loadAverage, processCpuMicros } from '../../harness/cpu.ts'
import { turnOrder } from '../../harness/order.ts'
import { median } from '../../harness/percentile.ts'
import { freePort } from '../../../test/support/ports.ts'
import { assertAlive, startServer, waitReady, type ServerProcess } from '../../harness/servers.ts'
import { spawnChild, within, type Child } from '../../harness/processes.ts'
import { positiveInt } from '../../harness/env.ts'
import { formatTable } from '../../harness/table.ts'
import { findWorkerdPid } from '../../harness/workerd-pid.ts'
import { startUpstashAdapter, type UpstashAdapter } from '../../../dev/upstash-adapter/server.ts'
import { featureKey } from '../../../edge/stores/features/feature-store.ts'
import seed from '../../../edge/stores/features/demo-seed.json' with { type: 'json' }
import { generateApiKey, hashApiKey, type KeyEntry } from '../../../edge/stores/keys/api-key.ts'
import { MODEL_REPOSITORY, PREDICT_PATH, WARM_USER, predictBody } from './workload.ts'
import { INFER_TOKEN } from './versus-peer.ts'

/**
 * The two rate-limit modes side by side in one workerd: the edge with Upstash configured (the
 * local adapter in this process over a real redis-server), one key limited exactly through the
 * Redis script and one by a `[[ratelimits]]` binding (Miniflare's simulation), each with a limit
 * no run reaches, taking turns round after round against one backend.
 */

export type RateLimitMode = 'exact (Redis)' | 'binding'
const MODES: readonly RateLimitMode[] = ['exact (Redis)', 'binding']
const BINDING = 'RATE_LIMIT_BENCH'

export interface RateLimitSettings {
  rounds: number
  durationS: number
  warmupS: number
  connections: number
}

/**
 * Env: BENCH_RATE_LIMIT_ROUNDS (3), BENCH_RATE_LIMIT_DURATION_S (5), BENCH_WARMUP_S (2),
 * BENCH_RATE_LIMIT_CONNECTIONS (4: with more, on a shared 2-core machine, the Redis check outlasts
 * the exact limiter's 50 ms budget, it falls back to the isolate, and the exact row would measure
 * no Redis at all; the script-calls column shows when that happens).
 */
export const rateLimitSettings = (): RateLimitSettings => ({
  rounds: positiveInt('BENCH_RATE_LIMIT_ROUNDS', 3),
  durationS: positiveInt('BENCH_RATE_LIMIT_DURATION_S', 5),
  warmupS: positiveInt('BENCH_WARMUP_S', 2),
  connections: positiveInt('BENCH_RATE_LIMIT_CONNECTIONS', 4),
})

interface Sample {
  load: LoadResult
  cpuUs: number
  /** Requests the Upstash adapter received (each a round trip from the worker) ÷ answered predicts. */
  roundTrips: number
  /** EVALSHA and EVAL (the exact limiter's script) ÷ answered predicts. */
  scriptCalls: number
}

export interface RateLimitRow {
  mode: RateLimitMode
  reqPerSec: number
  runs: number[]
  p50Ms: number
  p99Ms: number
  cpuUs: number
  roundTrips: number
  scriptCalls: number
}

export interface RateLimitResult {
  settings: RateLimitSettings
  rows: RateLimitRow[]
  loadBefore: string
  loadAfter: string
}

const rowOf = (mode: RateLimitMode, samples: readonly Sample[]): RateLimitRow => ({
  mode,
  reqPerSec: median(samples.map((s) => s.load.reqPerSec)),
  runs: samples.map((s) => s.load.reqPerSec),
  p50Ms: median(samples.map((s) => s.load.p50Ms)),
  p99Ms: median(samples.map((s) => s.load.p99Ms)),
  cpuUs: median(samples.map((s) => s.cpuUs)),
  roundTrips: median(samples.map((s) => s.roundTrips)),
  scriptCalls: median(samples.map((s) => s.scriptCalls)),
})

/** A throwaway redis-server on a free loopback port, once it accepts connections. */
const startRedisServer = async (): Promise<{ child: Child; port: number }> => {
  const port = await freePort()
  const child = spawnChild('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] })
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.process.stdout! }).on('line', (line) => {
      if (line.includes('Ready to accept connections')) resolve()
    })
    void child.exited.then((code) => reject(new Error(`redis-server exited with ${code} before it was ready`)))
  })
  await within(20_000, 'redis-server to be ready', ready)
  return { child, port }
}

const key = async (name: string, limit: Pick<KeyEntry, 'rate_limit' | 'rate_limit_per_minute'>): Promise<{ key: string; entry: KeyEntry }> => {
  const key = generateApiKey('bench')
  return { key, entry: { name, hash: await hashApiKey(key), scopes: ['predict'], ...limit } }
}

export const measureRateLimits = async (settings: RateLimitSettings, bundle: string, progress: (message: string) => void): Promise<RateLimitResult> => {
  const stops: Array<() => Promise<unknown>> = []
  const loadBefore = loadAverage()
  try {
    progress('rate limits: starting redis-server, the Upstash adapter and the backend')
    const redis = await startRedisServer()
    stops.push(() => redis.child.stop())
    const adapter: UpstashAdapter = await startUpstashAdapter({ redisPort: redis.port, token: generateApiKey('adapter') })
    stops.push(() => adapter.close())
    const client = new Redis({ url: adapter.url, token: adapter.token, retry: false, enableTelemetry: false })
    for (const [entity, ids] of Object.entries(seed)) {
      for (const [id, values] of Object.entries(ids)) await client.hset(featureKey(entity, id), values)
    }
    const backend: ServerProcess = await within(60_000, 'the backend to listen', startServer('backend/server.ts', { MODEL_REPOSITORY, INFER_TOKEN }))
    stops.push(() => backend.stop())
    await waitReady(backend.url)

    const exact = await key('exact', { rate_limit_per_minute: 1_000_000 })
    const tier = await key('tier', { rate_limit: BINDING })
    progress('rate limits: starting the edge in workerd')
    const edge = await within(60_000, 'workerd to listen', startServer('load/harness/workerd-host.ts', {
      EDGE_BUNDLE: bundle,
      EDGE_BINDINGS: JSON.stringify({
        BACKEND_URL: backend.url, INFER_TOKEN, API_KEYS: JSON.stringify([exact.entry, tier.entry]), MAX_INSTANCES: '64', ALLOWED_ORIGINS: '',
        UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: adapter.token,
      }),
      EDGE_RATELIMITS: JSON.stringify({ [BINDING]: { namespace_id: '9901', simple: { limit: 1_000_000_000, period: 60 } } }),
    }))
    stops.push(() => edge.stop())
    const pid = edge.child.process.pid === undefined ? undefined : findWorkerdPid(edge.child.process.pid)
    if (pid === undefined) throw new Error('rate limits: no workerd process found under its host')

    const body = predictBody(1, WARM_USER)
    const url = `${edge.url}${PREDICT_PATH}`
    const keys: Record<RateLimitMode, string> = { 'exact (Redis)': exact.key, binding: tier.key }
    for (const mode of MODES) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${keys[mode]}` }, body })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`rate limits: ${mode} answered ${res.status} when primed: ${text.slice(0, 300)}`)
    }
    const load = (mode: RateLimitMode, durationS: number) => runAutocannon({ url, body, headers: { authorization: `Bearer ${keys[mode]}` }, connections: settings.connections, durationS })
    const samples: Record<RateLimitMode, Sample[]> = { 'exact (Redis)': [], binding: [] }
    const scripts = () => (adapter.stats().commands.EVALSHA ?? 0) + (adapter.stats().commands.EVAL ?? 0)
    for (let round = 1; round <= settings.rounds; round++) {
      for (const mode of turnOrder(MODES, round)) {
        progress(`rate limits: round ${round}/${settings.rounds}, ${mode}`)
        await load(mode, settings.warmupS)
        const before = { cpu: processCpuMicros(pid), requests: adapter.stats().requests, scripts: scripts() }
        const result = await load(mode, settings.durationS)
        const after = { cpu: processCpuMicros(pid), requests: adapter.stats().requests, scripts: scripts() }
        assertAlive(edge, `the ${mode} run`)
        assertAlive(backend, `the ${mode} run`)
        if (result.ok !== result.completed) throw new Error(`rate limits: ${mode}: ${result.completed - result.ok} of ${result.completed} answers were not 2xx`)
        const per = (n: number) => (result.completed > 0 ? n / result.completed : Number.NaN)
        samples[mode].push({ load: result, cpuUs: per(after.cpu - before.cpu), roundTrips: per(after.requests - before.requests), scriptCalls: per(after.scripts - before.scripts) })
      }
    }
    return { settings, rows: MODES.map((mode) => rowOf(mode, samples[mode])), loadBefore, loadAfter: loadAverage() }
  } finally {
    for (const stop of stops.reverse()) await stop()
  }
}

const fixed = (x: number, digits: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '-')

export const formatRateLimits = ({ settings, rows, loadBefore, loadAfter }: RateLimitResult): string => {
  const [exact, binding] = rows
  const ratio = (f: (row: RateLimitRow) => number) => (exact && binding ? fixed(f(binding) / f(exact), 2) : '-')
  return [
    formatTable(
      ['rate limit mode', 'req/s', 'req/s by run', 'p50 ms', 'p99 ms', 'workerd CPU µs/predict', 'Redis round trips/predict', 'limiter script calls/predict'],
      [
        ...rows.map((r) => [r.mode, fixed(r.reqPerSec, 0), r.runs.map((x) => x.toFixed(0)).join(' '), fixed(r.p50Ms, 1), fixed(r.p99Ms, 1), fixed(r.cpuUs, 0), fixed(r.roundTrips, 2), fixed(r.scriptCalls, 2)]),
        ['binding ÷ exact', ratio((r) => r.reqPerSec), '', ratio((r) => r.p50Ms), ratio((r) => r.p99Ms), ratio((r) => r.cpuUs), '', ''],
      ],
      ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
    ),
    '',
    `Rate limits: one edge in workerd (Miniflare) with Upstash configured (the local adapter over a real redis-server, on this machine: a round trip is a loopback HTTP call, not a cross-region one),`,
    `  a key limited exactly through the Redis script and a key limited by a [[ratelimits]] binding, both with limits no run reaches; one backend; the same body (user ${WARM_USER}, one instance);`,
    `  autocannon, ${settings.connections} connections, ${settings.warmupS} s warm-up + ${settings.durationS} s per run, the modes taking turns for ${settings.rounds} rounds; cells are medians.`,
    `  workerd CPU includes Miniflare's simulation of the binding (a Durable Object with SQLite in the same process), which Cloudflare runs outside the worker: the binding row is an upper bound.`,
    `  Redis round trips: requests the adapter received during the run ÷ answered predicts (the limiter's script, plus counts flushed and records written after answers);`,
    `  limiter script calls under 1 in the exact row mean its checks outlasted the 50 ms budget and the isolate decided (a loaded machine).`,
    `  Load average (1/5/15 min) before ${loadBefore}, after ${loadAfter}.`,
  ].join('\n')
}
