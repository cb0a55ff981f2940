import { runAutocannon, type LoadResult } from './autocannon.ts'
import { processCpuMicros } from './cpu.ts'
import { measureCeiling } from './in-process.ts'
import { meanBatchSize, scrapeBatchCounters } from './metrics.ts'
import { cleanUp, installSignalHandlers, interrupted } from './processes.ts'
import type { ModelResults, ServedRun } from './results.ts'
import { assertAlive, primeInfer, startServer, waitReady, type ServerProcess } from './servers.ts'
import { formatChecks, formatMeasurements } from './table.ts'
import { computeBoundWorkload, creditRiskWorkload, type Workload } from './workloads.ts'
import { positiveInt } from './env.ts'

/**
 * `npm run bench:backend`: for the tiny demo model and a compute-bound one, measures what the
 * machine allows (onnxruntime in-process, HTTP with no model) and what the real server does with
 * batching off and on, all in one run, and prints the ratios against the targets.
 *
 * Env: BENCH_DURATION_S (default 15), BENCH_CONNECTIONS (64), BENCH_WARMUP_S (2).
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

/** Starts the real server, loads it, and reads the batch sizes it formed during the measured run. */
const measureServer = async (workload: Workload, batching: 'on' | 'off', settings: BenchSettings, monitoring: 'on' | 'off' = 'on'): Promise<ServedMeasurement> => {
  progress(`${workload.model}: server BATCHING=${batching} DRIFT_MONITORING=${monitoring}`)
  let server: ServerProcess | undefined
  try {
    server = await startServer('backend/server.ts', { MODEL_REPOSITORY: workload.repository, BATCHING: batching, DRIFT_MONITORING: monitoring })
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
const measureHttpCeiling = async (workload: Workload, sampleResponse: string, settings: BenchSettings): Promise<LoadResult> => {
  progress(`${workload.model}: HTTP ceiling`)
  let server: ServerProcess | undefined
  try {
    server = await startServer('load/http-ceiling.ts', { CEILING_RESPONSE: sampleResponse })
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

const measureInProcess = async (workload: Workload, version: string, batchSize: number, settings: BenchSettings): Promise<number> => {
  progress(`${workload.model}: C(${batchSize}) in-process`)
  const { rowsPerSec } = await measureCeiling({
    modelPath: workload.modelPath(version),
    inputName: workload.inputName,
    row: workload.row,
    batchSize,
    durationS: settings.ceilingS,
  })
  return rowsPerSec
}

/**
 * One model's rows. In-process ceilings run last, with no child alive, so they measure the
 * engine on otherwise idle cores (of this benchmark; other users of the machine are not ours).
 */
const benchModel = async (workload: Workload, checkAgainstHttp: boolean, settings: BenchSettings): Promise<ModelResults> => {
  const unbatched = await measureServer(workload, 'off', settings)
  const batched = await measureServer(workload, 'on', settings)
  // Drift counting costs only where the model ships a baseline to count against.
  const unmonitored = workload.monitored ? await measureServer(workload, 'on', settings, 'off') : undefined
  const httpCeiling = await measureHttpCeiling(workload, unbatched.sampleResponse, settings)
  if (!Number.isFinite(batched.meanBatch)) throw new Error(`${workload.model}: the batched run executed no batches`)
  const b = Math.max(1, Math.round(batched.meanBatch))
  const c1 = await measureInProcess(workload, batched.version, 1, settings)
  const cb = b === 1 ? c1 : await measureInProcess(workload, batched.version, b, settings)
  return {
    model: workload.model,
    rowsPerRequest: workload.rowsPerRequest,
    c1,
    b,
    cb,
    httpCeiling,
    unbatched: { load: unbatched.load, meanBatch: unbatched.meanBatch },
    batched: { load: batched.load, meanBatch: batched.meanBatch },
    ...(unmonitored ? { unmonitored: { load: unmonitored.load, meanBatch: unmonitored.meanBatch } } : {}),
    checkAgainstHttp,
  }
}

const main = async (): Promise<void> => {
  const settings = readSettings()
  installSignalHandlers()
  try {
    progress(`bench:backend — ${settings.connections} connections, ${settings.durationS} s per run (+${settings.warmupS} s warm-up), 127.0.0.1`)
    const tiny = await creditRiskWorkload()
    const heavy = await computeBoundWorkload()
    const results = [await benchModel(tiny, true, settings), await benchModel(heavy, false, settings)]
    const legend = [
      `C(b): onnxruntime-node in this process, 1 intra-op thread, batch b (b = the batched run's mean batch, rounded).`,
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
