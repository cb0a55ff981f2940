import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { runAutocannon, type LoadOptions, type LoadResult } from '../../harness/autocannon.ts'
import { machineCpuTicks, processCpuMicros } from '../../harness/cpu.ts'
import { positiveInt } from '../../harness/env.ts'
import type { CeilingResult } from '../../harness/in-process.ts'
import type { CeilingJob } from '../../harness/in-process-child.ts'
import { meanBatchSize, scrapeBatchCounters, type BatchCounters } from '../../harness/metrics.ts'
import { scrapePeerBatches, startFastApiPeer, startOipPeer } from './peers/start.ts'
import { cleanUp, installSignalHandlers, interrupted } from '../../harness/processes.ts'
import { summarize, verdictsFor, type Figures, type Sample, type VerdictInputs } from './results.ts'
import { turnOrder } from '../../harness/order.ts'
import { benchRuntimes, runtimesLegend, type Runtime } from '../../harness/runtimes.ts'
import { assertAlive, primeInfer, runEntry, startServer, waitReady, type ServerProcess } from '../../harness/servers.ts'
import { formatMeasurements, type CeilingRow, type MeasuredRow } from './table.ts'
import { formatVerdicts } from '../../harness/verdict.ts'
import { asBinary, computeBoundWorkload, creditRiskWorkload, withDispatch, type Dispatch, type Workload } from '../../harness/workloads.ts'
import { runWrk, wrkBin } from '../../harness/wrk.ts'

/**
 * `npm run bench:backend` (issue 16): the backend beside its peers in one run — HTTP with no model
 * (H), the smallest honest OIP batcher and its one-run-per-request twin (load/bench/backend/peers/oip-peer.ts),
 * FastAPI + uvicorn on numpy (load/bench/backend/peers/fastapi-peer.py) — for the tiny credit-risk model and
 * the compute-bound one; the batcher's idle and delay dispatch at 1 to 256 connections; and the
 * issue's targets, each judged PASS/MISS on the medians of this run's rows.
 *
 * Every server starts once and stays up; the rows then take turns, round after round (ABAB…), so
 * a slow spell of the machine lands on all alike; each round starts one row later, so no row is always
 * the one measured right after the heaviest load, and every run first waits (bounded) for quiet.
 *
 * Env: BENCH_DURATION_S (default 6), BENCH_WARMUP_S (1), BENCH_ROUNDS (3), BENCH_CONNECTIONS (64),
 * BENCH_QUICK=1 (1 s runs, 1 s warm-up: a smoke check of ~5 min), BENCH_LOADGEN (wrk | autocannon),
 * BENCH_NODES (Node binaries to run every Node row on, comma-separated), BENCH_PYTHON, WRK_BIN.
 */

interface BenchSettings {
  durationS: number
  warmupS: number
  rounds: number
  connections: number
  /** In-process runs are steady within seconds; more would only stretch the benchmark. */
  ceilingS: number
  loadgen: 'wrk' | 'autocannon'
}

/** Rows per request of the large-tensor rows (credit-risk's max_batch_size): JSON against the binary tensor data extension. */
const LARGE_ROWS = 64

/** The connection counts of the dispatch rows; 8 is the low-load target's, 64 and 256 the high-load ones'. */
const DISPATCH_CONNECTIONS = [1, 8, 64, 256]
const LOW_LOAD = 8
const HIGH_LOAD = [64, 256]

const readSettings = (): BenchSettings => {
  const quick = process.env.BENCH_QUICK === '1'
  const durationS = positiveInt('BENCH_DURATION_S', quick ? 1 : 6)
  const loadgen = process.env.BENCH_LOADGEN ?? 'wrk'
  if (loadgen !== 'wrk' && loadgen !== 'autocannon') throw new Error(`BENCH_LOADGEN must be wrk or autocannon, got "${loadgen}"`)
  if (loadgen === 'wrk' && !existsSync(wrkBin())) throw new Error(`${wrkBin()} not found: apt-get install wrk, or set WRK_BIN or BENCH_LOADGEN=autocannon`)
  return {
    durationS,
    warmupS: positiveInt('BENCH_WARMUP_S', 1),
    // Three: one run disturbed by a neighbour then moves the median, not the verdict.
    rounds: positiveInt('BENCH_ROUNDS', quick ? 2 : 3),
    connections: positiveInt('BENCH_CONNECTIONS', 64),
    ceilingS: Math.min(durationS, 3),
    loadgen,
  }
}

const progress = (message: string): void => {
  process.stderr.write(`${message}\n`)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const uptime = (): string => execFileSync('uptime', { encoding: 'utf8' }).trim()

const inferUrl = (base: string, model: string): string => `${base}/v2/models/${model}/infer`

/** What a row names itself by, and how the verdicts find it. */
type RowKind = 'http' | 'peer-batcher' | 'peer-per-request' | 'fastapi' | 'backend-on' | 'backend-off' | 'backend-drift-off' | `dispatch-${Dispatch}` | 'large-json' | 'large-binary'

const LABELS: Record<RowKind, string> = {
  'http': 'H http, no model',
  'peer-batcher': 'peer: Hono + ort, batcher',
  'peer-per-request': 'peer: Hono + ort, run per request',
  'fastapi': 'peer: FastAPI + numpy',
  'backend-on': 'backend BATCHING=on',
  'backend-off': 'backend BATCHING=off',
  'backend-drift-off': 'backend BATCHING=on DRIFT_MONITORING=off',
  'dispatch-idle': 'backend dispatch: idle',
  'dispatch-delay': 'backend dispatch: delay',
  'large-json': `backend, ${LARGE_ROWS}-row tensor as JSON`,
  'large-binary': `backend, ${LARGE_ROWS}-row tensor as binary`,
}

/** A server the benchmark loads: how to start it, at which concurrencies, and where its batch counts are. */
interface Subject {
  kind: RowKind
  workload: Workload
  runtime?: Runtime
  connections: readonly number[]
  start(): Promise<ServerProcess>
  batches?(url: string): Promise<BatchCounters>
  /** A server that may refuse its configuration (a dispatch field the backend does not know yet): its rows go unmeasured, the rest go on. */
  optional?: boolean
  /** The twin of a judged row: the same configuration in a second server, measured in the same rounds, so each verdict shows the run's noise floor. */
  duplicate?: boolean
}

/** A row's name in the table and the progress lines. */
const labelOf = ({ kind, duplicate }: Subject): string => `${LABELS[kind]}${duplicate ? ' (dup)' : ''}`

/** Rows no verdict judges: they orient the reader and need no twin. */
const UNJUDGED: ReadonlySet<RowKind> = new Set(['http', 'fastapi', 'large-json', 'large-binary'])

interface Running {
  subject: Subject
  server: ServerProcess
  /** One response, the template H answers with. */
  sample: string
  samples: Map<number, Sample[]>
}

const backendBatches = (workload: Workload) => (url: string) => scrapeBatchCounters(url, workload.model)

const startBackend = (workload: Workload, runtime: Runtime, env: Record<string, string>) => () =>
  startServer('backend/server.ts', { MODEL_REPOSITORY: workload.repository, ...env }, runtime.bin)

/** Starts, waits for ready, primes, and checks the server answers the version the peers serve. */
const bringUp = async (subject: Subject): Promise<Running> => {
  const name = `${subject.workload.model} ${labelOf(subject)}${subject.runtime ? ` (${subject.runtime.version})` : ''}`
  progress(`starting ${name}`)
  const server = await subject.start()
  try {
    await waitReady(server.url, { timeoutMs: 60_000 })
    const sample = await primeInfer(inferUrl(server.url, subject.workload.model), subject.workload.body, subject.workload.headers)
    const version = (JSON.parse(sample) as { model_version?: string }).model_version
    if (version !== subject.workload.version) throw new Error(`${name} answered version ${version}, the peers serve ${subject.workload.version}`)
    return { subject, server, sample, samples: new Map() }
  } catch (err) {
    await server.stop()
    throw err
  }
}

/** How long to wait for quiet, and what counts as quiet. */
interface Quiet {
  /** The longest wait; a run then starts anyway, and is counted as started busy. */
  boundMs: number
  windowMs: number
  /** The started servers together, in cores. */
  serversBelow: number
  /** The whole machine, a share of all its cores (neighbours, a previous row's garbage collection). */
  machineBelow: number
}

/** Before the first row: the servers' start-up (JIT, model loads) must be over. */
const STARTED: Quiet = { boundMs: 15_000, windowMs: 1_000, serversBelow: 0.05, machineBelow: 1 }
/** Before every measured run: the previous row's server done, the machine near idle. */
const BETWEEN_RUNS: Quiet = { boundMs: 5_000, windowMs: 500, serversBelow: 0.05, machineBelow: 0.1 }

/**
 * Waits until, over one window, the started servers together use under `serversBelow` cores and
 * the machine under `machineBelow` of its cores, or `boundMs` passes. Answers whether it was quiet.
 */
const settle = async (running: readonly Running[], quiet: Quiet): Promise<{ quiet: boolean; servers: number }> => {
  const pids = running.flatMap((r) => (r.server.child.process.pid === undefined ? [] : [r.server.child.process.pid]))
  const cpu = () => pids.reduce((n, pid) => n + processCpuMicros(pid), 0)
  const deadline = Date.now() + quiet.boundMs
  for (;;) {
    const before = cpu()
    const machineBefore = machineCpuTicks()
    await sleep(quiet.windowMs)
    const machineAfter = machineCpuTicks()
    const servers = (cpu() - before) / 1e3 / quiet.windowMs
    const ticks = machineAfter.total - machineBefore.total
    const machine = ticks > 0 ? (machineAfter.busy - machineBefore.busy) / ticks : 0
    const calm = servers < quiet.serversBelow && machine < quiet.machineBelow
    if (calm || Date.now() > deadline) return { quiet: calm, servers }
  }
}

const loadOnce = (settings: BenchSettings, options: LoadOptions): Promise<LoadResult> =>
  settings.loadgen === 'wrk' ? runWrk(options) : runAutocannon(options)

/** One warm-up and one measured run, with the server's CPU time and the batches it formed in between. */
const measure = async (running: Running, connections: number, settings: BenchSettings): Promise<Sample> => {
  const { subject, server } = running
  const options = { url: inferUrl(server.url, subject.workload.model), body: subject.workload.body, headers: subject.workload.headers, connections }
  await loadOnce(settings, { ...options, durationS: settings.warmupS })
  const pid = server.child.process.pid
  if (pid === undefined) throw new Error(`${server.url} has no pid`)
  const before = await subject.batches?.(server.url)
  const cpuBefore = processCpuMicros(pid)
  const load = await loadOnce(settings, { ...options, durationS: settings.durationS })
  const cpuAfter = processCpuMicros(pid)
  // Let batches still running when the load generator hung up reach the counters.
  await sleep(200)
  const after = await subject.batches?.(server.url)
  assertAlive(server, 'the measured run')
  return {
    load,
    cpuUsPerRequest: load.completed > 0 ? (cpuAfter - cpuBefore) / load.completed : Number.NaN,
    meanBatch: before && after ? meanBatchSize(before, after) : Number.NaN,
  }
}

/** C(b) in a child process on `runtime` (load/harness/in-process-child.ts): the engine as that Node drives it. */
const measureInProcess = async (workload: Workload, runtime: Runtime, batchSize: number, settings: BenchSettings): Promise<CeilingRow> => {
  progress(`${workload.model} ${runtime.version}: C(${batchSize}) in-process`)
  const job: CeilingJob = { modelPath: workload.modelPath(workload.version), inputName: workload.inputName, row: Array.from(workload.row), batchSize, durationS: settings.ceilingS }
  const stdout = await runEntry(`C(${batchSize}) of ${workload.model}`, runtime.bin, 'load/harness/in-process-child.ts', { CEILING_JOB: JSON.stringify(job) })
  return { model: workload.model, node: runtime.version, batch: batchSize, rowsPerSec: (JSON.parse(stdout) as CeilingResult).rowsPerSec }
}

/**
 * Every row of the run, in the order they take turns. Node rows run once per runtime; H, which
 * answers with the backend's own response, is started after the backend (`sampleOf`).
 */
const subjectsFor = async (tiny: Workload, heavy: Workload, large: Workload, runtimes: readonly Runtime[], settings: BenchSettings, sampleOf: (w: Workload, r: Runtime) => string): Promise<Subject[]> => {
  const main = [settings.connections]
  const withLowLoad = [...new Set([settings.connections, LOW_LOAD])]
  const idle = await withDispatch(tiny, 'idle')
  const delay = await withDispatch(tiny, 'delay')
  const perRuntime = (make: (r: Runtime) => Subject): Subject[] => runtimes.map(make)
  const subjects: Subject[] = [
    ...perRuntime((r) => ({ kind: 'backend-on', workload: tiny, runtime: r, connections: main, start: startBackend(tiny, r, { BATCHING: 'on' }), batches: backendBatches(tiny) })),
    ...perRuntime((r) => ({ kind: 'http', workload: tiny, runtime: r, connections: main, start: () => startServer('load/bench/backend/http-ceiling.ts', { CEILING_RESPONSE: sampleOf(tiny, r) }, r.bin) })),
    // The peers also at low load: what a clock-driven batcher and a plain run per request answer there.
    ...perRuntime((r) => ({ kind: 'peer-batcher', workload: tiny, runtime: r, connections: withLowLoad, start: () => startOipPeer(tiny, true, r.bin), batches: scrapePeerBatches })),
    ...perRuntime((r) => ({ kind: 'peer-per-request', workload: tiny, runtime: r, connections: withLowLoad, start: () => startOipPeer(tiny, false, r.bin), batches: scrapePeerBatches })),
    { kind: 'fastapi', workload: tiny, connections: main, start: () => startFastApiPeer(tiny) },
    ...perRuntime((r) => ({ kind: 'backend-off', workload: tiny, runtime: r, connections: main, start: startBackend(tiny, r, { BATCHING: 'off' }), batches: backendBatches(tiny) })),
    ...perRuntime((r) => ({ kind: 'backend-drift-off', workload: tiny, runtime: r, connections: main, start: startBackend(tiny, r, { BATCHING: 'on', DRIFT_MONITORING: 'off' }), batches: backendBatches(tiny) })),
    ...perRuntime((r) => ({ kind: 'backend-on', workload: heavy, runtime: r, connections: main, start: startBackend(heavy, r, { BATCHING: 'on' }), batches: backendBatches(heavy) })),
    ...perRuntime((r) => ({ kind: 'peer-batcher', workload: heavy, runtime: r, connections: main, start: () => startOipPeer(heavy, true, r.bin), batches: scrapePeerBatches })),
    ...([[idle, 'idle'], [delay, 'delay']] as const).flatMap(([workload, dispatch]) =>
      perRuntime((r): Subject => ({ kind: `dispatch-${dispatch}`, workload, runtime: r, connections: DISPATCH_CONNECTIONS, start: startBackend(workload, r, { BATCHING: 'on' }), batches: backendBatches(workload), optional: true })),
    ),
    // The same large tensor as JSON and as binary (Inference-Header-Content-Length); wrk only, autocannon's command line takes text.
    ...(settings.loadgen === 'wrk'
      ? ([['large-json', large], ['large-binary', asBinary(large)]] as const).flatMap(([kind, workload]) =>
          perRuntime((r): Subject => ({ kind, workload, runtime: r, connections: main, start: startBackend(workload, r, { BATCHING: 'on' }), batches: backendBatches(workload) })))
      : []),
  ]
  return [...subjects, ...subjects.filter((s) => !UNJUDGED.has(s.kind)).map((s) => ({ ...s, duplicate: true }))]
}

const figuresOf = (running: readonly Running[], model: string, kind: RowKind, connections: number, runtime?: Runtime, duplicate = false): Figures | undefined => {
  const row = running.find((r) => r.subject.workload.model === model && r.subject.kind === kind && (r.subject.runtime === undefined || r.subject.runtime === runtime) && (r.subject.duplicate ?? false) === duplicate)
  const samples = row?.samples.get(connections)
  return samples && samples.length > 0 ? summarize(samples, row!.subject.workload.rowsPerRequest) : undefined
}

const verdictInputs = (running: readonly Running[], tiny: Workload, heavy: Workload, runtime: Runtime, connections: number, duplicate: boolean): VerdictInputs => {
  const tinyRow = (kind: RowKind, at = connections) => figuresOf(running, tiny.model, kind, at, runtime, duplicate)
  return {
    tiny: {
      peerBatcher: tinyRow('peer-batcher'),
      peerPerRequest: tinyRow('peer-per-request'),
      backendOn: tinyRow('backend-on'),
      backendOff: tinyRow('backend-off'),
      backendDriftOff: tinyRow('backend-drift-off'),
    },
    computeBound: { backend: figuresOf(running, heavy.model, 'backend-on', connections, runtime, duplicate), peerBatcher: figuresOf(running, heavy.model, 'peer-batcher', connections, runtime, duplicate) },
    lowLoad: { connections: LOW_LOAD, backend: tinyRow('dispatch-idle', LOW_LOAD), peerPerRequest: tinyRow('peer-per-request', LOW_LOAD) },
    highLoad: HIGH_LOAD.map((c) => ({ connections: c, idle: tinyRow('dispatch-idle', c), delay: tinyRow('dispatch-delay', c) })),
  }
}

const main = async (): Promise<void> => {
  const settings = readSettings()
  const runtimes = benchRuntimes()
  installSignalHandlers()
  const started = uptime()
  try {
    progress(`bench:backend — ${settings.rounds} rounds of ${settings.durationS} s runs (+${settings.warmupS} s warm-up), ${settings.loadgen}, 127.0.0.1, on ${runtimes.map((r) => r.version).join(', ')}\n${started}`)
    const tiny = await creditRiskWorkload()
    const heavy = await computeBoundWorkload()
    const large = await creditRiskWorkload(LARGE_ROWS)
    const running: Running[] = []
    const skipped: string[] = []
    const sampleOf = (w: Workload, r: Runtime): string => {
      const backend = running.find((x) => x.subject.workload === w && x.subject.kind === 'backend-on' && x.subject.runtime === r)
      if (!backend) throw new Error(`H of ${w.model} needs the backend's response first`)
      return backend.sample
    }
    for (const subject of await subjectsFor(tiny, heavy, large, runtimes, settings, sampleOf)) {
      try {
        running.push(await bringUp(subject))
      } catch (err) {
        if (!subject.optional) throw err
        skipped.push(`${labelOf(subject)}: not measured, the backend did not serve it (${err instanceof Error ? err.message.split('\n')[0].slice(0, 300) : String(err)})`)
      }
    }
    progress(`servers idle: ${(100 * (await settle(running, STARTED)).servers).toFixed(1)}% of a core`)
    let runs = 0
    let startedBusy = 0
    const connectionOrder = [...new Set([settings.connections, ...DISPATCH_CONNECTIONS])]
    for (let round = 1; round <= settings.rounds; round++) {
      for (const connections of connectionOrder) {
        for (const row of turnOrder(running.filter((r) => r.subject.connections.includes(connections)), round)) {
          const calm = await settle(running, BETWEEN_RUNS)
          runs++
          if (!calm.quiet) startedBusy++
          progress(`round ${round}/${settings.rounds}, ${connections} conn: ${row.subject.workload.model} ${labelOf(row.subject)}${row.subject.runtime ? ` ${row.subject.runtime.version}` : ''}`)
          const sample = await measure(row, connections, settings)
          row.samples.set(connections, [...(row.samples.get(connections) ?? []), sample])
        }
      }
    }
    await Promise.all(running.map((r) => r.server.stop()))
    // In the order they were measured: the main concurrency's rows first, then each dispatch concurrency's side by side.
    const rows: MeasuredRow[] = connectionOrder.flatMap((connections) =>
      running.flatMap(({ subject, samples }) => {
        const list = samples.get(connections)
        if (!list) return []
        const { workload, runtime } = subject
        return [{ model: workload.model, label: labelOf(subject), node: runtime?.version, connections, samples: list, figures: summarize(list, workload.rowsPerRequest) }]
      }),
    )
    // In-process ceilings last, with no server alive: the engine on otherwise idle cores (of this benchmark).
    const ceilings: CeilingRow[] = []
    for (const workload of [tiny, heavy]) {
      for (const runtime of runtimes) {
        const batched = figuresOf(running, workload.model, 'backend-on', settings.connections, runtime)
        const b = Math.max(1, Math.round(batched?.meanBatch ?? 1))
        for (const size of [...new Set([1, b])]) ceilings.push(await measureInProcess(workload, runtime, size, settings))
      }
    }
    const verdicts = runtimes.map((r) => ({ node: r.version, verdicts: verdictsFor(verdictInputs(running, tiny, heavy, r, settings.connections, false), verdictInputs(running, tiny, heavy, r, settings.connections, true)) }))
    const largeTensor = runtimes.flatMap((r) => {
      const json = figuresOf(running, large.model, 'large-json', settings.connections, r)
      const binary = figuresOf(running, large.model, 'large-binary', settings.connections, r)
      if (!json || !binary) return []
      const ratio = (a: number, b: number) => `${a.toFixed(1)} / ${b.toFixed(1)} = ${(a / b).toFixed(2)}`
      return [`Large tensor, binary ÷ JSON (${large.model}, ${LARGE_ROWS} × ${large.row.length} FP32 per request, ${settings.connections} conn, ${r.version}): CPU µs/req ${ratio(binary.cpuUsPerRequest, json.cpuUsPerRequest)}, req/s ${ratio(binary.reqPerSec, json.reqPerSec)} (measured, not judged)`]
    })
    const legend = [
      runtimesLegend(runtimes),
      `Rows: every server started once, the rows taking turns (${settings.rounds} rounds, ABAB…, each round starting one row later); each cell is the median of its runs, "req/s by run" lists them.`,
      `Quiet: every run waits (≤ ${BETWEEN_RUNS.boundMs / 1000} s) for the servers to use < ${100 * BETWEEN_RUNS.serversBelow}% of a core and the machine < ${100 * BETWEEN_RUNS.machineBelow}% of its cores over ${BETWEEN_RUNS.windowMs} ms; ${startedBusy} of ${runs} runs started without that.`,
      `Load: ${settings.loadgen === 'wrk' ? 'wrk (1 thread, Lua script for the POST body)' : 'autocannon'} in its own process on the same cores, ${settings.durationS} s per run after ${settings.warmupS} s of warm-up; conn = keep-alive connections.`,
      `H: Hono on @hono/node-server with no model, same body in, the backend's response out. Peers (load/bench/backend/peers/): Hono + onnxruntime-node with a batcher at the model config's limits (max_batch_size ${tiny.maxBatchSize}, max_queue_delay_us ${tiny.maxQueueDelayUs}, one run at a time; no preferred sizes) or one session.run per request; FastAPI + uvicorn (1 worker, uvloop, httptools) on numpy with the ONNX file's weights.`,
      `backend dispatch: the model config's dynamic_batching.dispatch set in a temporary copy of the repository (idle: a free instance takes what is queued at once; delay: Triton's max_queue_delay_us wait). The other backend rows serve the repository as shipped (dispatch unset, so the default); where that is idle, BATCHING=on and "dispatch: idle" at ${settings.connections} conn are one configuration measured twice: their gap is this run's noise.`,
      `(dup): a second server of the same configuration, taking its turn like the others; the verdicts' noise column is each side ÷ its duplicate (1.00 = no noise), the spread a verdict must clear to mean anything.`,
      `CPU µs/req: the server process's CPU time (all threads, /proc/<pid>/stat) over the measured run ÷ requests completed. mean batch: the backend's batch-size histogram, the peer's own count.`,
      `${LABELS['large-json']} / binary: the backend served ${LARGE_ROWS} rows per request, the body as OIP JSON or as the binary tensor data extension (a JSON header of Inference-Header-Content-Length bytes, then the FP32 bytes); wrk only.`,
      `C(b): onnxruntime-node in a child process, 1 intra-op thread, batch b (b = the BATCHING=on row's mean batch, rounded).`,
      ...skipped,
    ].join('\n')
    process.stdout.write(`\n${formatMeasurements(rows, ceilings)}\n\n${formatVerdicts(verdicts)}\n\n${largeTensor.map((line) => `${line}\n`).join('')}${largeTensor.length > 0 ? '\n' : ''}${legend}\n\nuptime at start: ${started}\nuptime at end:   ${uptime()}\n`)
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
