import { performance } from 'node:perf_hooks'
import ort from 'onnxruntime-node'

export interface CeilingOptions {
  modelPath: string
  inputName: string
  /** One encoded row; the batch repeats it. */
  row: Float32Array
  batchSize: number
  durationS: number
  warmupS?: number
}

export interface CeilingResult {
  rowsPerSec: number
  runsPerSec: number
}

/**
 * Session settings the server's inference workers use (backend/executor/worker.ts), so the
 * ceiling is the same engine the server drives, minus HTTP, JSON, batching and threads.
 */
const SESSION_OPTIONS: ort.InferenceSession.SessionOptions = {
  executionProviders: ['cpu'],
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
}

const batchOf = (row: Float32Array, rows: number): Float32Array => {
  const data = new Float32Array(row.length * rows)
  for (let r = 0; r < rows; r++) data.set(row, r * row.length)
  return data
}

/** Runs back to back for `seconds`; returns how many runs finished and how long they took. */
const runFor = async (session: ort.InferenceSession, feeds: ort.InferenceSession.FeedsType, seconds: number) => {
  const started = performance.now()
  const until = started + seconds * 1000
  let runs = 0
  let now = started
  while (now < until) {
    await session.run(feeds)
    runs++
    now = performance.now()
  }
  return { runs, elapsedS: (now - started) / 1000 }
}

/**
 * C(b): rows per second one onnxruntime session sustains at batch size b in this process, with
 * one intra-op thread as in the server. The input tensor is built once: this is the engine's
 * ceiling, not a measurement of tensor construction.
 */
export const measureCeiling = async ({ modelPath, inputName, row, batchSize, durationS, warmupS = 0.5 }: CeilingOptions): Promise<CeilingResult> => {
  const session = await ort.InferenceSession.create(modelPath, SESSION_OPTIONS)
  try {
    const feeds = { [inputName]: new ort.Tensor('float32', batchOf(row, batchSize), [batchSize, row.length]) }
    // The first runs at a shape allocate and plan; keep them out of the number.
    await runFor(session, feeds, warmupS)
    const { runs, elapsedS } = await runFor(session, feeds, durationS)
    return { runsPerSec: runs / elapsedS, rowsPerSec: (runs * batchSize) / elapsedS }
  } finally {
    await session.release()
  }
}
