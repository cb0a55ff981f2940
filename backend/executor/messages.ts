import type { TensorMap } from './tensor.ts'

/** What the executor and its worker threads say to each other. */
export interface WorkerInit {
  /** The model's bytes, checked against its MANIFEST sha256 before the thread gets them. */
  modelBytes: Uint8Array
  /** Providers to try, in order; the first that creates a session wins, `cpu` is the last resort. */
  executionProviders: string[]
  intraOpThreads: number
}

export type WorkerRequest =
  | { type: 'run'; id: number; feeds: TensorMap; outputs: string[] }
  | { type: 'close' }

export type WorkerReply =
  | { type: 'ready'; provider: string; inputNames: string[]; outputNames: string[] }
  | { type: 'result'; id: number; outputs: TensorMap; computeUs: number }
  | { type: 'failed'; id?: number; message: string }
