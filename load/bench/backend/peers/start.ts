import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BatchCounters } from '../../../harness/metrics.ts'
import { onCleanup } from '../../../harness/processes.ts'
import { ROOT, startListening, startServer, type ServerProcess } from '../../../harness/servers.ts'
import type { Workload } from '../../../harness/workloads.ts'
import { exportMlpGraph } from './mlp-graph.ts'

/** Debian's Python, which has fastapi, uvicorn, numpy, uvloop and httptools; BENCH_PYTHON names another. */
export const pythonBin = (): string => process.env.BENCH_PYTHON ?? '/usr/bin/python3'

/** The Hono + onnxruntime-node peer (load/bench/backend/peers/oip-peer.ts), batching with the model config's limits or running once per request. */
export const startOipPeer = (workload: Workload, batching: boolean, node = process.execPath): Promise<ServerProcess> =>
  startServer('load/bench/backend/peers/oip-peer.ts', {
    PEER_MODEL_PATH: workload.modelPath(workload.version),
    PEER_MODEL_NAME: workload.model,
    PEER_MODEL_VERSION: workload.version,
    PEER_MAX_BATCH: batching ? String(workload.maxBatchSize) : '0',
    PEER_DELAY_US: String(workload.maxQueueDelayUs),
  }, node)

/** Rows and batches the peer ran so far, as the backend's batch-size histogram counts them. */
export const scrapePeerBatches = async (url: string): Promise<BatchCounters> => {
  const res = await fetch(`${url}/peer/stats`)
  if (!res.ok) throw new Error(`${url}/peer/stats answered ${res.status}`)
  return (await res.json()) as BatchCounters
}

/** FastAPI + uvicorn on numpy (load/bench/backend/peers/fastapi-peer.py), with the weights of the workload's ONNX file. */
export const startFastApiPeer = async (workload: Workload): Promise<ServerProcess> => {
  const graphDir = await mkdtemp(join(tmpdir(), 'bench-fastapi-'))
  onCleanup(() => rm(graphDir, { recursive: true, force: true }))
  await exportMlpGraph(workload.modelPath(workload.version), graphDir)
  return startListening('FastAPI peer', pythonBin(), [join(ROOT, 'load/bench/backend/peers/fastapi-peer.py')], {
    PEER_GRAPH_DIR: graphDir,
    PEER_MODEL_NAME: workload.model,
    PEER_MODEL_VERSION: workload.version,
  })
}
