import { createApp } from '../../../edge/app.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import { SlidingWindowLimiter } from '../../../edge/stores/limits/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { percentile } from '../../harness/percentile.ts'
import type { Runtime } from '../../harness/runtimes.ts'
import { runEntry } from '../../harness/servers.ts'
import { createFloorApp } from './floor-app.ts'
import { InProcessBackendStandIn } from './in-process-backend.ts'
import { PREDICT_PATH, WARM_USER, applicant, benchKey, creditRiskMetadata } from './workload.ts'

export type FeatureCache = 'warm' | 'cold'

export interface PipelineCase {
  instances: number
  cache: FeatureCache
  /** The bare Hono app of `createFloorApp` instead of the edge. */
  floor?: boolean
}

export interface PipelineResult extends PipelineCase {
  /** The version of the Node the case ran on. */
  node: string
  iterations: number
  /** Over every sample of every process. */
  p50Us: number
  /** Each process's own p50, in the order they ran. */
  processP50sUs: number[]
  p99Us: number
  meanUs: number
  /** This process's CPU time (all threads: GC, the crypto pool) over the measured loop ÷ iterations (includes building each Request, outside the timer). */
  cpuUsPerRequest: number
}


export interface CaseSamples {
  /** Milliseconds per timed request. */
  samples: number[]
  /** This process's CPU time over the timed loop (all threads: GC, the crypto pool). */
  cpuMicros: number
}

/**
 * One case, in this process: `app.request()` on the real `createApp` (auth with a hashed key,
 * the in-isolate rate limiter, normalize, validate, enrich through the isolate feature cache in
 * front of the embedded memory store, route, predict) with the backend replaced by the
 * in-process stand-in, or on the floor app. Sequential requests, each timed with performance.now
 * around `await app.request(...)`; the Request object (its body as UTF-8 bytes, no
 * Content-Length) is built just before the timer starts.
 */
export const sampleCase = async ({ instances, cache, floor: bare }: PipelineCase, { iterations, warmup }: { iterations: number; warmup: number }): Promise<CaseSamples> => {
  const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
  const { key, entry } = await benchKey()
  const app = bare
    ? createFloorApp()
    : createApp({
        parts: { keys: new MemoryKeyStore([entry]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts: new MemoryRolloutStore(), limiter: new SlidingWindowLimiter() },
        // The line is still built; writing it is the runtime's job (Workers Logs), not the pipeline's.
        log: () => {},
      })
  // BACKEND_URL only names the configuration; the stand-in is what answers.
  const env = { BACKEND_URL: 'in-process-stand-in', MAX_INSTANCES: '64' }
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` }
  const rows = Array.from({ length: instances }, (_, i) => applicant(i))
  let coldUser = 0
  // Bytes, as a body arrives from the network: a string body would be UTF-8-encoded inside the timer.
  const encoder = new TextEncoder()
  const body = (): Uint8Array =>
    // A user id never seen before: the isolate cache misses and the memory store is read.
    encoder.encode(JSON.stringify({ instances: rows, entity: { user_id: cache === 'warm' ? WARM_USER : `bench-cold-${process.pid}-${++coldUser}` } }))
  const once = async (): Promise<number> => {
    const request = new Request(`http://edge.bench${PREDICT_PATH}`, { method: 'POST', headers, body: body() })
    const started = performance.now()
    const res = await app.request(request, undefined, env)
    const elapsed = performance.now() - started
    if (res.status !== 200) throw new Error(`in-process predict answered ${res.status}: ${(await res.text()).slice(0, 500)}`)
    await res.arrayBuffer()
    return elapsed
  }
  // The first request compiles the spec's validator and fills the catalog; then the JIT warms up.
  for (let i = 0; i <= warmup; i++) await once()
  const samples: number[] = []
  const cpuBefore = process.cpuUsage()
  for (let i = 0; i < iterations; i++) samples.push(await once())
  const cpu = process.cpuUsage(cpuBefore)
  if (!bare && standIn.calls === 0) throw new Error('the in-process stand-in was never called: the pipeline did not reach the backend')
  return { samples, cpuMicros: cpu.user + cpu.system }
}

/** Runs one case in a fresh process of `runtime` (load/bench/edge/pipeline-child.ts) and answers its samples. */
const sampleInChild = async (c: PipelineCase, runtime: Runtime, options: { iterations: number; warmup: number }): Promise<CaseSamples> => {
  const stdout = await runEntry(`the pipeline child for ${JSON.stringify(c)}`, runtime.bin, 'load/bench/edge/pipeline-child.ts', {
    PIPELINE_CASE: JSON.stringify(c), PIPELINE_ITERATIONS: String(options.iterations), PIPELINE_WARMUP: String(options.warmup),
  })
  return JSON.parse(stdout) as CaseSamples
}

/**
 * Every case measured on every runtime in processes of its own, so no row inherits the JIT state
 * another row left (measured: the one-instance row ran ~30 µs slower after the 32-instance rows
 * had warmed the same functions up for other shapes). The rows take turns over `rounds`
 * processes each, so a slow spell of this shared machine lands on every row alike.
 */
export const measurePipeline = async (
  cases: readonly PipelineCase[],
  runtimes: readonly Runtime[],
  { iterations, warmup, rounds }: { iterations: number; warmup: number; rounds: number },
): Promise<PipelineResult[]> => {
  const perRound = Math.ceil(iterations / rounds)
  const rows = cases.flatMap((c) => runtimes.map((runtime) => ({ c, runtime, samples: [] as number[], cpuMicros: 0, processP50sUs: [] as number[] })))
  for (let round = 0; round < rounds; round++) {
    for (const row of rows) {
      const { samples, cpuMicros } = await sampleInChild(row.c, row.runtime, { iterations: perRound, warmup })
      row.samples.push(...samples)
      row.cpuMicros += cpuMicros
      row.processP50sUs.push(percentile(Float64Array.from(samples).sort(), 50) * 1e3)
    }
  }
  return rows.map(({ c, runtime, samples, cpuMicros, processP50sUs }): PipelineResult => {
    const sorted = Float64Array.from(samples).sort()
    let sum = 0
    for (const s of sorted) sum += s
    const n = sorted.length
    return { ...c, node: runtime.version, iterations: n, p50Us: percentile(sorted, 50) * 1e3, processP50sUs, p99Us: percentile(sorted, 99) * 1e3, meanUs: (sum / n) * 1e3, cpuUsPerRequest: cpuMicros / n }
  })
}
