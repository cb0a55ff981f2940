import { createApp } from '../../edge/app.ts'
import { MemoryKeyStore } from '../../edge/auth/key-store.ts'
import { ModelCatalog } from '../../edge/catalog/model-catalog.ts'
import { SlidingWindowLimiter } from '../../edge/rate-limit/sliding-window.ts'
import { MemoryRolloutStore } from '../../edge/routing/rollout-store.ts'
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
  iterations: number
  p50Us: number
  p99Us: number
  meanUs: number
  /** This process's CPU time (all threads: GC, the crypto pool) over the measured loop ÷ iterations (includes building each Request, outside the timer). */
  cpuUsPerRequest: number
}

/** Timed requests per case before the next case takes its turn. */
const BLOCK = 250

const percentile = (sorted: Float64Array, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]

/**
 * The edge pipeline's own cost: `app.request()` on the real `createApp` (auth with a hashed key,
 * the in-isolate rate limiter, normalize, validate, enrich through the isolate feature cache in
 * front of the embedded memory store, route, predict) with the backend replaced by the
 * in-process stand-in. Sequential requests, the cases taking turns in blocks of 250, each timed
 * with performance.now around `await app.request(...)`; the Request object (its body as UTF-8
 * bytes, no Content-Length) is built just before the timer starts.
 */
export const measurePipeline = async (
  cases: readonly PipelineCase[],
  { iterations, warmup }: { iterations: number; warmup: number },
): Promise<PipelineResult[]> => {
  const standIn = new InProcessBackendStandIn(await creditRiskMetadata())
  const { key, entry } = await benchKey()
  const app = createApp({
    keys: new MemoryKeyStore([entry]),
    services: () => ({ transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts: new MemoryRolloutStore() }),
    limiter: new SlidingWindowLimiter(),
    // The line is still built; writing it is the runtime's job (Workers Logs), not the pipeline's.
    log: () => {},
  })
  // BACKEND_URL only names the configuration; the stand-in is what answers.
  const env = { BACKEND_URL: 'in-process-stand-in', MAX_INSTANCES: '64' }
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` }
  let coldUser = 0

  // Bytes, as a body arrives from the network: a string body would be UTF-8-encoded inside the timer.
  const encoder = new TextEncoder()
  const bodyFor = (instances: number, cache: FeatureCache): Uint8Array =>
    encoder.encode(JSON.stringify({
      instances: Array.from({ length: instances }, (_, i) => applicant(i)),
      // A user id never seen before: the isolate cache misses and the memory store is read.
      entity: { user_id: cache === 'warm' ? WARM_USER : `bench-cold-${++coldUser}` },
    }))

  const floor = createFloorApp()
  const once = async ({ instances, cache, floor: bare }: PipelineCase): Promise<number> => {
    const request = new Request(`http://edge.bench${PREDICT_PATH}`, { method: 'POST', headers, body: bodyFor(instances, cache) })
    const started = performance.now()
    const res = await (bare ? floor : app).request(request, undefined, env)
    const elapsed = performance.now() - started
    if (res.status !== 200) throw new Error(`in-process predict answered ${res.status}: ${(await res.text()).slice(0, 500)}`)
    await res.arrayBuffer()
    return elapsed
  }

  // First request per case outside any timing: compiles the spec's validator and fills the catalog.
  for (const c of cases) await once(c)
  // Warm-up of every case before any is timed, so the first row does not pay for the JIT of all.
  for (const c of cases) for (let i = 0; i < warmup; i++) await once(c)
  // Cases take turns in blocks, so a slow spell of this shared machine lands on every row alike
  // instead of on whichever row happened to be running.
  const samples = cases.map(() => new Float64Array(iterations))
  const cpuMicros = cases.map(() => 0)
  for (let done = 0; done < iterations; done += BLOCK) {
    const block = Math.min(BLOCK, iterations - done)
    for (const [k, c] of cases.entries()) {
      const cpuBefore = process.cpuUsage()
      for (let i = done; i < done + block; i++) samples[k][i] = await once(c)
      const cpu = process.cpuUsage(cpuBefore)
      cpuMicros[k] += cpu.user + cpu.system
    }
  }
  const results = cases.map((c, k): PipelineResult => {
    const sorted = samples[k].sort()
    let sum = 0
    for (const s of sorted) sum += s
    return { ...c, iterations, p50Us: percentile(sorted, 50) * 1e3, p99Us: percentile(sorted, 99) * 1e3, meanUs: (sum / iterations) * 1e3, cpuUsPerRequest: cpuMicros[k] / iterations }
  })
  if (standIn.calls === 0) throw new Error('the in-process stand-in was never called: the pipeline did not reach the backend')
  return results
}
