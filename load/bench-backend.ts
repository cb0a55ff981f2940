import { runAutocannon, type LoadResult } from './autocannon.ts'
import { processCpuMicros } from './cpu.ts'
import type { CeilingResult } from './in-process.ts'
import type { CeilingJob } from './in-process-child.ts'
import { meanBatchSize, scrapeBatchCounters } from './metrics.ts'
import { cleanUp, installSignalHandlers, interrupted } from './processes.ts'
import type { ModelResults, ServedRun } from './results.ts'
import { benchRuntimes, inTurn, runtimesLegend, type Runtime } from './runtimes.ts'
import { assertAlive, primeInfer, runEntry, startServer, waitReady, type ServerProcess } from './servers.ts'
import { formatChecks, formatMeasurements } from './table.ts'
import { computeBoundWorkload, creditRiskWorkload, type Workload } from './workloads.ts'
import { positiveInt } from './env.ts'

/**
 * `npm run bench:backend`: for the tiny demo model and a compute-bound one, measures what the
 * machine allows (onnxruntime in-process, HTTP with no model) and what the real server does with
 * batching off and on, all in one run, and prints the ratios against the targets.
 *
 * Env: BENCH_DURATION_S (default 15), BENCH_CONNECTIONS (64), BENCH_WARMUP_S (2),
 * BENCH_NODES (Node binaries to run every row on, comma-separated; default the one running this).
 */

interface BenchSettings {
  durationS: number
  connections: number
  warmupS: number
  /** In-process runs are steady within seconds; more would only stretch the benchmark. */
  ceilingS: number
}

const readSettings = (): BenchSettings => {
  const durationS = positiveInt('BENCH_DURATION_S', 15)
  return {
    durationS,
    connections: positiveInt('BENCH_CONNECTIONS', 64),
    warmupS: positiveInt('BENCH_WARMUP_S', 2),
    ceilingS: Math.min(durationS, 5),
  }
}

const progress = (message: string): void => {
  process.stderr.write(`${message}\n`)
}

const inferUrl = (base: string, model: string): string => `${base}/v2/models/${model}/infer`

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** One autocannon run at the benchmark's concurrency. */
const loadFor = (url: string, body: string, settings: BenchSettings, durationS: number): Promise<LoadResult> =>
  runAutocannon({ url, body, connections: settings.connections, durationS })

/** A measured run, with the server's own CPU time per completed request. */
const measuredLoad = async (server: ServerProcess, url: string, body: string, settings: BenchSettings): Promise<LoadResult> => {
  const pid = server.child.process.pid
  const cpuBefore = pid === undefined ? Number.NaN : processCpuMicros(pid)
  const load = await loadFor(url, body, settings, settings.durationS)
  const cpuAfter = pid === undefined ? Number.NaN : processCpuMicros(pid)
  return { ...load, serverCpuUsPerRequest: load.completed > 0 ? (cpuAfter - cpuBefore) / load.completed : Number.NaN }
}

interface ServedMeasurement extends ServedRun {
  /** The server's answer to one request: the template the HTTP ceiling answers with. */
  sampleResponse: string
  version: string
}

/** Starts the real server on `runtime`, loads it, and reads the batch sizes it formed during the measured run. */
const measureServer = async (workload: Workload, runtime: Runtime, batching: 'on' | 'off', settings: BenchSettings, monitoring: 'on' | 'off' = 'on'): Promise<ServedMeasurement> => {
  progress(`${workload.model} ${runtime.version}: server BATCHING=${batching} DRIFT_MONITORING=${monitoring}`)
  let server: ServerProcess | undefined
  try {
    server = await startServer('backend/server.ts', { MODEL_REPOSITORY: workload.repository, BATCHING: batching, DRIFT_MONITORING: monitoring }, runtime.bin)
    await waitReady(server.url)
    const url = inferUrl(server.url, workload.model)
    const sampleResponse = await primeInfer(url, workload.body)
    // Uncounted: JIT, socket pools and the batcher's drain-rate estimate settle first.
    await loadFor(url, workload.body, settings, settings.warmupS)
    const before = await scrapeBatchCounters(server.url, workload.model)
    const load = await measuredLoad(server, url, workload.body, settings)
    // Let batches still running when autocannon hung up reach the histogram.
    await sleep(200)
    assertAlive(server, 'the measured run')
    const after = await scrapeBatchCounters(server.url, workload.model)
    const version = String((JSON.parse(sampleResponse) as { model_version?: string }).model_version ?? '1')
    return { load, meanBatch: meanBatchSize(before, after), sampleResponse, version }
  } finally {
    await server?.stop()
  }
}

/** H: the Hono server with no model, answering with the real server's response. */
const measureHttpCeiling = async (workload: Workload, runtime: Runtime, sampleResponse: string, settings: BenchSettings): Promise<LoadResult> => {
  progress(`${workload.model} ${runtime.version}: HTTP ceiling`)
  let server: ServerProcess | undefined
  try {
    server = await startServer('load/http-ceiling.ts', { CEILING_RESPONSE: sampleResponse }, runtime.bin)
    await waitReady(server.url)
    const url = inferUrl(server.url, workload.model)
    await primeInfer(url, workload.body)
    await loadFor(url, workload.body, settings, settings.warmupS)
    const load = await measuredLoad(server, url, workload.body, settings)
    assertAlive(server, 'the measured run')
    return load
  } finally {
    await server?.stop()
  }
}

/** C(b) in a child process on `runtime` (load/in-process-child.ts): the engine as that Node drives it. */
const measureInProcess = async (workload: Workload, runtime: Runtime, version: string, batchSize: number, settings: BenchSettings): Promise<number> => {
  progress(`${workload.model} ${runtime.version}: C(${batchSize}) in-process`)
  const job: CeilingJob = {
    modelPath: workload.modelPath(version),
    inputName: workload.inputName,
    row: Array.from(workload.row),
    batchSize,
    durationS: settings.ceilingS,
  }
  const stdout = await runEntry(`C(${batchSize}) of ${workload.model}`, runtime.bin, 'load/in-process-child.ts', { CEILING_JOB: JSON.stringify(job) })
  return (JSON.parse(stdout) as CeilingResult).rowsPerSec
}

/**
 * One model's rows, one result per runtime, the runtimes taking turns row by row so a slow
 * spell of the machine lands on each alike. In-process ceilings run last, with no server alive,
 * so they measure the engine on otherwise idle cores (of this benchmark; other users of the
 * machine are not ours).
 */
const benchModel = async (workload: Workload, checkAgainstHttp: boolean, settings: BenchSettings, runtimes: readonly Runtime[]): Promise<ModelResults[]> => {
  const unbatched = await inTurn(runtimes, (r) => measureServer(workload, r, 'off', settings))
  const batched = await inTurn(runtimes, (r) => measureServer(workload, r, 'on', settings))
  // Drift counting costs only where the model ships a baseline to count against.
  const unmonitored = workload.monitored ? await inTurn(runtimes, (r) => measureServer(workload, r, 'on', settings, 'off')) : undefined
  const httpCeiling = await inTurn(runtimes, (r, i) => measureHttpCeiling(workload, r, unbatched[i].sampleResponse, settings))
  const bs = batched.map(({ meanBatch }, i) => {
    if (!Number.isFinite(meanBatch)) throw new Error(`${workload.model} ${runtimes[i].version}: the batched run executed no batches`)
    return Math.max(1, Math.round(meanBatch))
  })
  // Every runtime's b on every runtime: each C row then has a counterpart to divide by.
  const ceilings = runtimes.map(() => new Map<number, number>())
  for (const batchSize of [...new Set([1, ...bs])].sort((x, y) => x - y)) {
    const rowsPerSec = await inTurn(runtimes, (r, i) => measureInProcess(workload, r, batched[i].version, batchSize, settings))
    rowsPerSec.forEach((x, i) => ceilings[i].set(batchSize, x))
  }
  return runtimes.map((runtime, i) => ({
    model: workload.model,
    node: runtime.version,
    rowsPerRequest: workload.rowsPerRequest,
    b: bs[i],
    ceilings: ceilings[i],
    httpCeiling: httpCeiling[i],
    unbatched: { load: unbatched[i].load, meanBatch: unbatched[i].meanBatch },
    batched: { load: batched[i].load, meanBatch: batched[i].meanBatch },
    ...(unmonitored ? { unmonitored: { load: unmonitored[i].load, meanBatch: unmonitored[i].meanBatch } } : {}),
    checkAgainstHttp,
  }))
}

const main = async (): Promise<void> => {
  const settings = readSettings()
  const runtimes = benchRuntimes()
  installSignalHandlers()
  try {
    progress(`bench:backend — ${settings.connections} connections, ${settings.durationS} s per run (+${settings.warmupS} s warm-up), 127.0.0.1, on ${runtimes.map((r) => r.version).join(', ')}`)
    const tiny = await creditRiskWorkload()
    const heavy = await computeBoundWorkload()
    const results = [...(await benchModel(tiny, true, settings, runtimes)), ...(await benchModel(heavy, false, settings, runtimes))]
    const legend = [
      runtimesLegend(runtimes),
      `C(b): onnxruntime-node in a child process on the row's Node, 1 intra-op thread, batch b (b = that Node's batched run's mean batch, rounded; every Node's b is measured on each Node).`,
      `H: Hono on @hono/node-server with no model, same body in, same response out.`,
      `CPU µs/req: the server process's CPU time (all threads) over the measured run ÷ requests completed; steady when neighbours are not.`,
      `Load: autocannon in its own process, ${settings.connections} connections, ${settings.durationS} s per row, on the same cores.`,
    ].join('\n')
    process.stdout.write(`\n${formatMeasurements(results)}\n\n${formatChecks(results)}\n\n${legend}\n`)
  } finally {
    await cleanUp()
  }
}

main().catch((err: unknown) => {
  // Children killed by Ctrl-C make the run in progress fail; that is not worth a stack trace.
  if (interrupted()) return
  process.stderr.write(`bench:backend failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exitCode = 1
})
