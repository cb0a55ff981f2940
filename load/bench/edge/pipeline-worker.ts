import { createApp } from '../../../edge/app.ts'
import type { KeyEntry } from '../../../edge/stores/keys/api-key.ts'
import { MemoryKeyStore } from '../../../edge/stores/keys/memory.ts'
import { ModelCatalog } from '../../../edge/backend-client/catalog.ts'
import type { BackendModelMetadata } from '../../../edge/backend-client/transport.ts'
import { SlidingWindowLimiter } from '../../../edge/stores/limits/memory.ts'
import { MemoryRolloutStore } from '../../../edge/stores/rollouts/memory.ts'
import { createFloorApp } from './floor-app.ts'
import { InProcessBackendStandIn } from './in-process-backend.ts'

/** Set by `bench:edge` (load/bench/edge/workerd-pipeline.ts): JSON texts, made in Node where the files are. */
export interface PipelineWorkerBindings {
  BENCH_METADATA: string
  BENCH_KEY: string
  BENCH_KEY_ENTRY: string
  /** The predict body every request sends. */
  BENCH_BODY: string
}

interface Bench {
  apps: Record<'edge' | 'floor', { request: ReturnType<typeof createApp>['request'] }>
  headers: Record<string, string>
  body: Uint8Array
}

let bench: Bench | undefined

const setUp = (env: PipelineWorkerBindings): Bench => {
  const standIn = new InProcessBackendStandIn(JSON.parse(env.BENCH_METADATA) as BackendModelMetadata)
  const edge = createApp({
    parts: { keys: new MemoryKeyStore([JSON.parse(env.BENCH_KEY_ENTRY) as KeyEntry]), transport: standIn, catalog: new ModelCatalog({ transport: standIn }), rollouts: new MemoryRolloutStore(), limiter: new SlidingWindowLimiter() },
    log: () => {},
  })
  const body = new TextEncoder().encode(env.BENCH_BODY)
  const headers = { 'content-type': 'application/json', 'content-length': String(body.byteLength), authorization: `Bearer ${env.BENCH_KEY}` }
  return { apps: { edge, floor: createFloorApp() }, headers, body }
}

/**
 * BENCHMARK WORKER, never deployed: runs the edge pipeline in workerd itself, where the clock
 * stands still during a request, so it cannot time one request. `GET /run?app=edge|floor&n=500`
 * runs n sequential `app.request()` calls in-process (the same IN-PROCESS STAND-IN backend as
 * the Node rows, each Request built and each answer read inside the loop, as a network request
 * would arrive with its Content-Length); the host times whole calls and divides.
 */
export default {
  async fetch(request: Request, env: PipelineWorkerBindings): Promise<Response> {
    bench ??= setUp(env)
    const url = new URL(request.url)
    const n = Number(url.searchParams.get('n') ?? '0')
    const app = bench.apps[url.searchParams.get('app') === 'floor' ? 'floor' : 'edge']
    const appEnv = { BACKEND_URL: 'in-process-stand-in', MAX_INSTANCES: '64' }
    for (let i = 0; i < n; i++) {
      const req = new Request('http://edge.bench/v1/models/credit-risk/predict', { method: 'POST', headers: bench.headers, body: bench.body })
      const res = await app.request(req, undefined, appEnv)
      if (res.status !== 200) return new Response(await res.text(), { status: 500 })
      await res.arrayBuffer()
    }
    return new Response(String(n))
  },
}
