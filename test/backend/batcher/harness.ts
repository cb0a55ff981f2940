import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { BatchExecutor, BatcherClock } from '../../../backend/batcher/batcher.ts'
import { Executor } from '../../../backend/executor/executor.ts'
import type { RunResult } from '../../../backend/executor/executor.ts'
import type { HostTensor, TensorMap } from '../../../backend/executor/tensor.ts'
import { sha256 } from '../../../backend/repository/manifest.ts'
import { buildComputeBoundModel } from '../../../tools/training/compute-bound.ts'

/** Features per row of the tiny model every batcher test runs. */
export const WIDTH = 4

/** A real executor of a tiny 4 → 8 → 2 model, in a scratch directory that `close` removes. */
export const startTinyExecutor = async (instanceCount: number): Promise<{ executor: Executor; close(): Promise<void> }> => {
  const dir = await mkdtemp(join(tmpdir(), 'batcher-'))
  const model = await buildComputeBoundModel(dir, { name: 'tiny', inputs: WIDTH, hidden: [8], outputs: 2 })
  const modelPath = join(model.versionDir, 'model.onnx')
  const executor = await Executor.start({ modelPath, modelSha256: sha256(await readFile(modelPath)), executionProviders: ['cpu'], intraOpThreads: 1, instanceCount })
  return {
    executor,
    async close() {
      await executor.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export const rows = (values: number[][]): { features: HostTensor } => ({
  features: { datatype: 'FP32', dims: [values.length, WIDTH], data: Float32Array.from(values.flat()) },
})
export const row = (i: number): number[] => [i, -i, i / 2, 1]
export const request = (values: number[][], deadline?: number) => ({ inputs: rows(values), rows: values.length, outputs: ['probabilities'], deadline })

/** Each row's two probabilities. */
export const probabilities = (t: HostTensor): number[][] => {
  const data = Array.from(t.data as Float32Array)
  return Array.from({ length: t.dims[0] }, (_, i) => data.slice(i * 2, i * 2 + 2))
}

/** What the model answers for each row run alone: the reference every batched answer must match. */
export const alone = async (executor: BatchExecutor, values: number[][]): Promise<number[][]> => {
  const out: number[][] = []
  for (const v of values) {
    const { outputs } = await executor.run(rows([v]), ['probabilities'])
    out.push(probabilities(outputs.probabilities)[0]!)
  }
  return out
}

/** Lets everything scheduled for this event-loop turn (the batcher's deferred pump among it) run. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * The real executor with a hand on its instances: while held, a batch occupies its instance
 * without starting, so a test decides exactly when every instance is busy and when one frees.
 */
export class HeldExecutor implements BatchExecutor {
  /** Rows of every batch the batcher sent, in order. */
  readonly batches: number[] = []
  private running = 0
  private held = true
  private waiting: Array<() => void> = []

  constructor(private readonly inner: Executor) {}

  get size(): number {
    return this.inner.size
  }

  get idle(): number {
    return this.inner.size - this.running
  }

  async run(feeds: TensorMap, outputs: string[]): Promise<RunResult> {
    this.running++
    this.batches.push(Object.values(feeds)[0]!.dims[0]!)
    try {
      if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve))
      return await this.inner.run(feeds, outputs)
    } finally {
      this.running--
    }
  }

  /** Lets the held batches run, and every later one at once. */
  release(): void {
    this.held = false
    for (const resume of this.waiting.splice(0)) resume()
  }
}

/** A clock that moves only when told: a timer fires in `advance`, never on its own. */
export class ManualClock implements BatcherClock {
  private at = 0
  private nextHandle = 1
  private timers = new Map<number, { at: number; callback: () => void }>()

  now(): number {
    return this.at
  }

  setTimeout(callback: () => void, ms: number): number {
    const handle = this.nextHandle++
    this.timers.set(handle, { at: this.at + ms, callback })
    return handle
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number)
  }

  /** When the earliest armed timer fires; Infinity when none is armed. */
  get nextAt(): number {
    let at = Infinity
    for (const timer of this.timers.values()) at = Math.min(at, timer.at)
    return at
  }

  /** Timers armed and not yet fired or cleared. */
  get pending(): number {
    return this.timers.size
  }

  advance(ms: number): void {
    this.at += ms
    const due = [...this.timers].filter(([, t]) => t.at <= this.at).sort(([, a], [, b]) => a.at - b.at)
    for (const [handle, timer] of due) {
      this.timers.delete(handle)
      timer.callback()
    }
  }
}
