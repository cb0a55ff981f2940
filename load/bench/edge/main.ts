import { cpus, loadavg } from 'node:os'
import { processCpuMicros } from '../../harness/cpu.ts'
import { runAutocannon, type LoadResult } from '../../harness/autocannon.ts'
import { measurePipeline, type PipelineCase, type PipelineResult } from './pipeline.ts'
import { PIPELINE_TARGET_US, bestProcessP50Us, formatEdgeTable, isTargetCase, type EndToEnd } from './table.ts'
import { findWorkerdPid } from '../../harness/workerd-pid.ts'
import { INFER_PATH, MODEL_REPOSITORY, PREDICT_PATH, WARM_USER, benchKey, creditRiskMetadata, equivalentInferBody, predictBody } from './workload.ts'
import { WORKERD_RATIO_TARGET, measureInWorkerd, type WorkerdPipelineResult, type WorkerdRatio } from './workerd-pipeline.ts'
import { formatInstructionsTable } from './instructions.ts'
import { bundleWorker } from './bundle.ts'
import { formatVersusPeer, measureVersusPeer, versusPeerSettings } from './versus-peer.ts'
import { formatWorkerdInstructions, measureWorkerdInstructions, workerdInstructionsSettings } from './workerd-instructions.ts'
import { formatStartup, measureStartup } from './startup.ts'
import { formatRateLimits, measureRateLimits, rateLimitSettings } from './rate-limit.ts'
import { instructionsGate, instructionsLegend, measureInstructions, readInstructionsSettings } from './instructions-run.ts'
import { cleanUp, installSignalHandlers, interrupted, within } from '../../harness/processes.ts'
import { benchRuntimes, inTurn, runtimesLegend, type Runtime } from '../../harness/runtimes.ts'
import { assertAlive, primeInfer, startServer, waitReady, type ServerProcess } from '../../harness/servers.ts'
import { positiveInt } from '../../harness/env.ts'

/**
 * `npm run bench:edge`: the edge pipeline's own cost per request in-process (the real createApp,
 * the backend replaced by an in-process stand-in), then end to end through workerd against the
 * backend directly, in one run and one table.
 *
 * Env: BENCH_DURATION_S (10), BENCH_CONNECTIONS (16), BENCH_WARMUP_S (2),
 * BENCH_ITERATIONS (10000 timed sequential requests per in-process row, over 5 processes),
 * BENCH_WORKERD_BATCHES (30 calls of 500 requests per app in workerd), BENCH_NODES (Node binaries
 * to run the in-process and backend rows on, comma-separated; default the one running this),
 * BENCH_INSTRUCTIONS (0 skips the instructions-per-request section; default on when valgrind is on
 * PATH) with BENCH_INSTRUCTIONS_LOW/_HIGH/_WARMUP/_REPETITIONS (load/bench/edge/instructions-run.ts),
 * BENCH_PEER_ROUNDS (3) and BENCH_PEER_DURATION_S (8) for the edge against the peer worker
 * (load/bench/edge/versus-peer.ts, issue 34's edge targets), BENCH_RATE_LIMIT_ROUNDS (3),
 * BENCH_RATE_LIMIT_DURATION_S (5) and BENCH_RATE_LIMIT_CONNECTIONS (4) for the rate-limit modes
 * (load/bench/edge/rate-limit.ts), BENCH_WORKERD_INSTRUCTIONS_* for the edge and the peer worker
 * counted in workerd (load/bench/edge/workerd-instructions.ts).
 */

interface Settings {
  durationS: number
  connections: number
  warmupS: number
  iterations: number
  workerdBatches: number
}

const readSettings = (): Settings => ({
  durationS: positiveInt('BENCH_DURATION_S', 10),
  connections: positiveInt('BENCH_CONNECTIONS', 16),
  warmupS: positiveInt('BENCH_WARMUP_S', 2),
  iterations: positiveInt('BENCH_ITERATIONS', 10_000),
  workerdBatches: positiveInt('BENCH_WORKERD_BATCHES', 30),
})

const progress = (message: string): void => {
  process.stderr.write(`${message}\n`)
}

const PIPELINE_CASES: PipelineCase[] = [
  { instances: 1, cache: 'warm' },
  { instances: 1, cache: 'cold' },
  { instances: 32, cache: 'warm' },
  { instances: 32, cache: 'cold' },
  { instances: 1, cache: 'warm', floor: true },
]

/** Processes per in-process row (the rows take turns), and untimed requests in each before timing. */
const PIPELINE_ROUNDS = 8
const PIPELINE_WARMUP = 5_000

/** Requests per workerd call; each call's time less an empty call's, ÷ this, is one batch mean. */
const WORKERD_BATCH = 500

const inWorkerd = async (settings: Settings): Promise<{ results: WorkerdPipelineResult[]; ratio: WorkerdRatio }> => {
  progress('in workerd: bundling the pipeline worker (wrangler deploy --dry-run)')
  const bundle = await bundleWorker('load/bench/edge/pipeline-worker.ts')
  const { key, entry } = await benchKey()
  progress(`in workerd: ${settings.workerdBatches} batches of ${WORKERD_BATCH} requests per app`)
  return measureInWorkerd({
    bundle,
    bindings: { BENCH_METADATA: JSON.stringify(await creditRiskMetadata()), BENCH_KEY: key, BENCH_KEY_ENTRY: JSON.stringify(entry), BENCH_BODY: predictBody(1, WARM_USER) },
    batches: settings.workerdBatches,
    batchSize: WORKERD_BATCH,
  })
}

const primeEdge = async (url: string, body: string, headers: Record<string, string>): Promise<void> => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`priming the edge answered ${res.status}: ${text.slice(0, 500)}`)
}

/** A measured run with the CPU time `pid` spent per completed request. */
const measured = async (run: () => Promise<LoadResult>, pid: number | undefined): Promise<{ load: LoadResult; cpuUs: number }> => {
  const before = pid === undefined ? Number.NaN : processCpuMicros(pid)
  const load = await run()
  const after = pid === undefined ? Number.NaN : processCpuMicros(pid)
  return { load, cpuUs: load.completed > 0 ? (after - before) / load.completed : Number.NaN }
}

/**
 * The backend on `runtime`, directly and through the edge in workerd. The workerd host stays on
 * the benchmark's own Node (Miniflare needs a recent one); workerd does the edge's work.
 */
const endToEnd = async (settings: Settings, bundle: string, runtime: Runtime): Promise<EndToEnd> => {
  let backend: ServerProcess | undefined
  let edge: ServerProcess | undefined
  try {
    progress(`end to end: starting the backend on ${runtime.version}`)
    backend = await within(60_000, 'the backend to listen', startServer('backend/server.ts', { MODEL_REPOSITORY }, runtime.bin))
    await waitReady(backend.url)
    const { key, entry } = await benchKey()
    progress('end to end: starting the edge in workerd')
    edge = await within(60_000, 'workerd to listen', startServer('load/harness/workerd-host.ts', {
      EDGE_BUNDLE: bundle,
      EDGE_BINDINGS: JSON.stringify({ BACKEND_URL: backend.url, API_KEYS: JSON.stringify([entry]), MAX_INSTANCES: '64', ALLOWED_ORIGINS: '' }),
    }))
    const workerdPid = edge.child.process.pid === undefined ? undefined : findWorkerdPid(edge.child.process.pid)

    const inferUrl = `${backend.url}${INFER_PATH}`
    const inferBody = await equivalentInferBody()
    const predictUrl = `${edge.url}${PREDICT_PATH}`
    const body = predictBody(1, WARM_USER)
    const auth = { authorization: `Bearer ${key}` }
    await primeInfer(inferUrl, inferBody)
    await primeEdge(predictUrl, body, auth)

    const load = (url: string, b: string, headers: Record<string, string>, durationS: number) => () =>
      runAutocannon({ url, body: b, headers, connections: settings.connections, durationS })

    progress(`end to end: backend direct (${settings.warmupS} s warm-up + ${settings.durationS} s)`)
    await load(inferUrl, inferBody, {}, settings.warmupS)()
    const direct = await measured(load(inferUrl, inferBody, {}, settings.durationS), backend.child.process.pid)
    assertAlive(backend, 'the backend-direct run')

    progress(`end to end: through the edge (${settings.warmupS} s warm-up + ${settings.durationS} s)`)
    await load(predictUrl, body, auth, settings.warmupS)()
    const viaEdge = await measured(load(predictUrl, body, auth, settings.durationS), workerdPid)
    assertAlive(backend, 'the edge run')
    assertAlive(edge, 'the edge run')

    return {
      node: runtime.version,
      backend: direct.load,
      edge: viaEdge.load,
      connections: settings.connections,
      durationS: settings.durationS,
      backendCpuUs: direct.cpuUs,
      workerdCpuUs: viaEdge.cpuUs,
    }
  } finally {
    await edge?.stop()
    await backend?.stop()
  }
}

const main = async (): Promise<void> => {
  const settings = readSettings()
  const instructionsSettings = readInstructionsSettings()
  const gate = instructionsGate()
  const runtimes = benchRuntimes()
  installSignalHandlers()
  const load0 = loadavg()
  try {
    progress(`bench:edge — in-process: ${settings.iterations} timed sequential requests per row; end to end: ${settings.connections} connections, ${settings.durationS} s (+${settings.warmupS} s warm-up), 127.0.0.1; on ${runtimes.map((r) => r.version).join(', ')}`)
    // In-process first, with no child alive: the pipeline gets the cores this benchmark leaves free.
    progress('in-process pipeline')
    const pipeline = await measurePipeline(PIPELINE_CASES, runtimes, { iterations: settings.iterations, warmup: PIPELINE_WARMUP, rounds: PIPELINE_ROUNDS })
    const { results: workerd, ratio } = await inWorkerd(settings)
    progress('end to end: bundling the worker (wrangler deploy --dry-run)')
    const bundle = await bundleWorker()
    const e2e = await inTurn(runtimes, (runtime) => endToEnd(settings, bundle, runtime))
    const load1 = loadavg()
    const targetLine = (r: PipelineResult): string => {
      const best = bestProcessP50Us(r)
      return `  ${r.node}: ${best.toFixed(1)} µs → ${best < PIPELINE_TARGET_US ? 'PASS' : 'MISS'} (p50 of each of its ${PIPELINE_ROUNDS} processes: ${r.processP50sUs.map((x) => x.toFixed(0)).join(', ')} µs; over all samples ${r.p50Us.toFixed(1)} µs).`
    }
    const targets = pipeline.filter(isTargetCase)
    const legend = [
      runtimesLegend(runtimes),
      `In-process (on the row's Node): the real createApp (auth with a SHA-256-hashed key, in-isolate rate limiter, normalize, validate, enrich, route, predict), one app, sequential requests,`,
      `  each row in ${PIPELINE_ROUNDS} fresh processes of its own (no row inherits another's JIT state; the rows take turns), ${PIPELINE_WARMUP} untimed requests first in each;`,
      `  p50/p99/mean: performance.now() around \`await app.request(req)\` with req (body as UTF-8 bytes, no Content-Length) built just before;`,
      `  p50 best proc: the lowest of a row's per-process p50s. A neighbour on this VM's other hyperthread makes the same work ~1.5× slower in CPU time, not just in wall time`,
      `  (the same row measured 251 and 347 CPU µs per request in two processes minutes apart); interference only adds, so the lowest is the code's own cost.`,
      `  CPU µs/req: this process, all threads, per request. floor: a bare Hono app on the same path (read the body, JSON.parse, c.json): Node's Request/Response cost before the edge does anything.`,
      `  IN-PROCESS STAND-IN backend: a Transport answering a correctly shaped InferResponse without I/O (no HTTP, no JSON, no model); metadata read from models/credit-risk/config.json.`,
      `  warm: the seeded user ${WARM_USER}, an isolate-cache hit; cold: a new user id per request, an isolate-cache miss read from the embedded memory store (not Redis; the id is unknown there, so defaults fill in).`,
      `In workerd (node '-': no Node runs these rows): load/bench/edge/pipeline-worker.ts, bundled like the worker, runs ${WORKERD_BATCH} sequential app.request() per call (each Request, with its Content-Length, built and its answer read in the loop);`,
      `  workerd's clock stands still inside a request, so the host times ${settings.workerdBatches} calls per app and subtracts an empty call: batch means, their median and 90th percentile in the p50 and p99 columns.`,
      `End to end: autocannon in its own process, ${settings.connections} connections, ${settings.durationS} s per row, all on this machine's cores; p50/p99 at autocannon's 1 ms resolution;`,
      `  mean = connections ÷ req/s (Little's law, sub-ms). CPU µs/req: the backend process (backend row), the workerd process (edge row).`,
      `  edge: the wrangler-bundled worker in workerd via Miniflare (no wrangler dev proxy), 1 instance, user ${WARM_USER}; backend: backend/server.ts defaults (BATCHING=on) on the row's Node, same applicant pre-encoded;`,
      `  Miniflare's host process runs on ${process.version} in every row (it needs Node ≥ 22): the node column names the backend's.`,
      `Target: in-process p50 < ${PIPELINE_TARGET_US} µs for 1 instance, warm cache, judged on the best process:${targets.length > 0 ? '' : ' not measured'}`,
      ...targets.map(targetLine),
      `Target: in workerd, pipeline ÷ floor per request ≤ ${WORKERD_RATIO_TARGET}× (median over ${ratio.pairs} pairs of back-to-back batches, each less an empty call; a slow spell hits both halves of a pair):`,
      `  ${ratio.median.toFixed(2)}× → ${ratio.median <= WORKERD_RATIO_TARGET ? 'PASS' : 'MISS'}`,
      `Load average (1/5/15 min) at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at end ${load1.map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} cores shared with other work: wall-clock rows move with the neighbours.`,
      `Command: npm run bench:edge   (env BENCH_DURATION_S=${settings.durationS} BENCH_CONNECTIONS=${settings.connections} BENCH_WARMUP_S=${settings.warmupS} BENCH_ITERATIONS=${settings.iterations} BENCH_WORKERD_BATCHES=${settings.workerdBatches} BENCH_NODES=${runtimes.map((r) => r.bin).join(',')})`,
    ].join('\n')
    process.stdout.write(`\n${formatEdgeTable(pipeline, workerd, e2e)}\n\n${legend}\n`)
    // Issue 34's targets: the edge against the minimal peer worker, both in workerd, with their duplicates.
    const peerBundle = await bundleWorker('load/bench/edge/peer/worker.ts')
    const versus = await measureVersusPeer(versusPeerSettings(), { edge: bundle, peer: peerBundle }, progress)
    process.stdout.write(`\n${formatVersusPeer(versus)}\n`)
    progress('worker startup: each worker in fresh workerd processes, edge and floor in turn')
    process.stdout.write(`\n${formatStartup(await measureStartup())}\n`)
    // The two rate-limit modes, exact through Redis and a [[ratelimits]] binding: a measured row, not a target.
    process.stdout.write(`\n${formatRateLimits(await measureRateLimits(rateLimitSettings(), bundle, progress))}\n`)
    // Last, after every timed row: valgrind keeps the cores busy for minutes, and a count does not mind neighbours.
    if (!gate.run) {
      process.stdout.write(`\n${gate.reason}\n`)
    } else {
      progress(`instructions per request under valgrind on ${process.version} (${instructionsSettings.repetitions} × 2 processes per app, a few minutes)`)
      const figure = await measureInstructions(process.execPath, instructionsSettings, progress)
      process.stdout.write(`\n${formatInstructionsTable(figure)}\n\n${instructionsLegend(process.version, instructionsSettings, figure)}\n`)
      progress('edge and peer worker in workerd under valgrind, instructions per predict')
      process.stdout.write(`\n${formatWorkerdInstructions(await measureWorkerdInstructions({ edge: bundle, peer: peerBundle }, workerdInstructionsSettings(), progress))}\n`)
    }
    process.stdout.write(`\nLoad average (1/5/15 min) at the start of the run ${load0.map((x) => x.toFixed(2)).join(' ')}, at its end ${loadavg().map((x) => x.toFixed(2)).join(' ')}\n`)
  } finally {
    await cleanUp()
  }
}

main().catch((err: unknown) => {
  if (interrupted()) return
  process.stderr.write(`bench:edge failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
