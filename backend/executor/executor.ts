import { readFile } from 'node:fs/promises'
import { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { sha256 } from '../repository/manifest.ts'
import type { WorkerInit, WorkerReply, WorkerRequest } from './messages.ts'
import { ModelSession } from './session.ts'
import { compactForTransfer, type TensorMap } from './tensor.ts'

/**
 * Where sessions run. `worker`: one thread per instance, so a long run never holds the event
 * loop. `main`: one session on the event loop's own thread, for models whose batches are too
 * short to be worth a thread hop (the hop costs more CPU than the run).
 */
export type Placement = 'worker' | 'main'

export interface ExecutorOptions extends Omit<WorkerInit, 'modelBytes'> {
  modelPath: string
  /** What model.onnx must hash to (its MANIFEST line): checked each time a session is created. */
  modelSha256: string
  /** Worker threads, each with its own session; one run per instance at a time. */
  instanceCount: number
  /** `main` runs one session on this thread whatever `instanceCount` says; default `worker`. */
  placement?: Placement
  /** The thread's entry module; the inference worker unless a test substitutes one that can be made to fail. */
  workerUrl?: URL
}

/** What an executor tells its owner about instances lost and replaced. */
export interface ExecutorEvents {
  /** Capacity is back (a replacement instance is ready, or the main-thread instance's turn ended): work that waited can go. */
  restored(): void
  /** A lost instance could not be replaced; `instancesLeft` still serve. */
  failed(error: Error, instancesLeft: number): void
}

export interface RunResult {
  outputs: TensorMap
  computeUs: number
}

interface Pending {
  resolve: (result: RunResult) => void
  reject: (err: Error) => void
}

/** How long a closing thread may take to release its session and end by itself. */
const CLOSE_GRACE_MS = 5_000

const compiledWorker = new URL('./worker.js', import.meta.url)
const sourceWorker = new URL('./worker.ts', import.meta.url)

/**
 * A compiled build runs worker.js directly. From source the worker is TypeScript, and a thread
 * started inside vitest (whose own loader threads do not inherit) would have no loader for it, so
 * a small bootstrap registers tsx inside the thread before importing it.
 */
const threadEntry = (module: URL = import.meta.url.endsWith('.ts') ? sourceWorker : compiledWorker): URL => {
  if (!module.href.endsWith('.ts')) return module
  const tsxRoot = dirname(createRequire(import.meta.url).resolve('tsx/package.json'))
  const register = pathToFileURL(join(tsxRoot, 'dist/esm/api/index.mjs')).href
  const bootstrap = `import { register } from ${JSON.stringify(register)}; register(); await import(${JSON.stringify(module.href)})`
  return new URL(`data:text/javascript,${encodeURIComponent(bootstrap)}`)
}

/** The model's bytes, refused unless they hash to what the MANIFEST said when the version was verified. */
const verifiedModelBytes = async (path: string, expected: string): Promise<Uint8Array> => {
  const bytes = await readFile(path)
  const actual = sha256(bytes)
  if (actual !== expected) throw new Error(`${path} changed since its version was verified: sha256 ${actual}, MANIFEST ${expected}`)
  return bytes
}

/** One session and the thread it runs on. */
interface Instance {
  /** Running a batch. */
  readonly busy: boolean
  /** Takes a batch now: what the batcher asks before it sends one. */
  readonly idle: boolean
  readonly provider: string
  readonly inputNames: string[]
  readonly outputNames: string[]
  run(feeds: TensorMap, outputs: string[]): Promise<RunResult>
  close(): Promise<void>
}

/**
 * The session on the event loop's own thread: no copies, no other thread to wake. A run holds
 * the thread, so it happens at once when asked; the instance takes work once per event-loop
 * turn. Asked while the turn's I/O is still being read, it says it is not idle and ends the
 * turn with `setImmediate`, then reports itself free (`onTurnEnd`): what arrived in the turn
 * runs together (as one batch when batching, back to back when not, with the model's memory
 * warm), and a lone request waits only for the turn to end.
 */
class MainThreadInstance implements Instance {
  private running = false
  private turnEnded = false
  private turnScheduled = false
  readonly provider: string
  readonly inputNames: string[]
  readonly outputNames: string[]

  constructor(private readonly session: ModelSession, private readonly onTurnEnd: () => void) {
    this.provider = session.provider
    this.inputNames = session.inputNames
    this.outputNames = session.outputNames
  }

  get busy(): boolean {
    return this.running
  }

  get idle(): boolean {
    if (this.running) return false
    if (this.turnEnded) return true
    if (!this.turnScheduled) {
      this.turnScheduled = true
      setImmediate(() => {
        this.turnScheduled = false
        this.turnEnded = true
        try {
          this.onTurnEnd()
        } finally {
          this.turnEnded = false
        }
      })
    }
    return false
  }

  run(feeds: TensorMap, outputs: string[]): Promise<RunResult> {
    this.running = true
    try {
      return Promise.resolve(this.session.run(feeds, outputs))
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)))
    } finally {
      this.running = false
    }
  }

  close(): Promise<void> {
    this.session.release()
    return Promise.resolve()
  }
}

/** One worker thread holding one session. */
class ThreadInstance implements Instance {
  private pending: Pending | undefined
  private nextId = 0
  provider = 'unknown'
  inputNames: string[] = []
  outputNames: string[] = []

  private constructor(private readonly worker: Worker, private readonly onLost: (instance: Instance, err: Error) => void) {}

  static start(init: WorkerInit, entry: URL, onLost: (instance: Instance, err: Error) => void): Promise<ThreadInstance> {
    // The bytes move to the thread, not copied: the buffer is detached here afterwards.
    const worker = new Worker(entry, { workerData: init, transferList: [init.modelBytes.buffer as ArrayBuffer] })
    const instance = new ThreadInstance(worker, onLost)
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        void worker.terminate()
        reject(err)
      }
      worker.once('error', fail)
      worker.once('message', (first: WorkerReply) => {
        worker.off('error', fail)
        if (first.type !== 'ready') return fail(new Error(first.type === 'failed' ? first.message : 'worker did not start'))
        instance.provider = first.provider
        instance.inputNames = first.inputNames
        instance.outputNames = first.outputNames
        instance.listen()
        resolve(instance)
      })
    })
  }

  get busy(): boolean {
    return this.pending !== undefined
  }

  get idle(): boolean {
    return this.pending === undefined
  }

  run(feeds: TensorMap, outputs: string[]): Promise<RunResult> {
    const id = ++this.nextId
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject }
      const message: WorkerRequest = { type: 'run', id, feeds: compactForTransfer(feeds), outputs }
      this.worker.postMessage(message)
    })
  }

  /**
   * The thread releases its session and ends by itself; terminating it while the session is
   * being released can abort the process from native code, so that is only the fallback.
   */
  async close(): Promise<void> {
    this.worker.removeAllListeners('exit')
    const message: WorkerRequest = { type: 'close' }
    await new Promise<void>((resolve) => {
      const fallback = setTimeout(() => void this.worker.terminate().finally(resolve), CLOSE_GRACE_MS)
      this.worker.once('exit', () => {
        clearTimeout(fallback)
        resolve()
      })
      this.worker.postMessage(message)
    })
  }

  private listen() {
    this.worker.on('message', (reply: WorkerReply) => {
      const pending = this.pending
      this.pending = undefined
      if (!pending) return
      if (reply.type === 'result') pending.resolve({ outputs: reply.outputs, computeUs: reply.computeUs })
      else pending.reject(new Error(reply.type === 'failed' ? reply.message : 'unexpected worker reply'))
    })
    const lost = (err: Error) => {
      this.pending?.reject(err)
      this.pending = undefined
      this.onLost(this, err)
    }
    this.worker.on('error', lost)
    this.worker.on('exit', (code) => lost(new Error(`inference worker exited with code ${code}`)))
  }
}

/**
 * The sessions of one model version: a pool of inference worker threads, or one session on the
 * main thread. The batcher asks how many are idle and hands each a whole batch; a worker that
 * dies is replaced, from the verified bytes only, and its batch fails. Its owner hears when
 * capacity returns and when a replacement fails.
 */
export class Executor {
  private closed = false
  private events: ExecutorEvents = { restored() {}, failed() {} }
  /** Known from the first session on, and still after close (metrics are removed by it). */
  private firstProvider = 'unknown'

  private constructor(private readonly options: ExecutorOptions, private readonly instances: Instance[]) {}

  static async start(options: ExecutorOptions): Promise<Executor> {
    const executor = new Executor(options, [])
    const bytes = await verifiedModelBytes(options.modelPath, options.modelSha256)
    if (options.placement === 'main') {
      const { executionProviders, intraOpThreads } = options
      const session = ModelSession.create({ modelBytes: bytes, executionProviders, intraOpThreads })
      const instance = new MainThreadInstance(session, () => executor.events.restored())
      executor.instances.push(instance)
      executor.firstProvider = instance.provider
      return executor
    }
    // Each thread takes its buffer over (transferred, so detached here): all but the last get a copy.
    const last = options.instanceCount - 1
    const started = await Promise.allSettled(
      Array.from({ length: options.instanceCount }, (_, i) => executor.startInstance(i === last ? bytes : new Uint8Array(bytes))),
    )
    const instances = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
    const failure = started.find((s): s is PromiseRejectedResult => s.status === 'rejected')
    if (failure) {
      await Promise.all(instances.map((i) => i.close()))
      throw failure.reason instanceof Error ? failure.reason : new Error(String(failure.reason))
    }
    executor.instances.push(...instances)
    executor.firstProvider = instances[0]?.provider ?? 'unknown'
    return executor
  }

  /** Where lost-and-replaced news goes (the batcher's owner). */
  watch(events: ExecutorEvents): void {
    this.events = events
  }

  get placement(): Placement {
    return this.options.placement ?? 'worker'
  }

  /** The execution provider the sessions run on. */
  get provider(): string {
    return this.firstProvider
  }

  /** Tensor names the model itself declares. */
  get signature(): { inputs: string[]; outputs: string[] } {
    return { inputs: this.instances[0]?.inputNames ?? [], outputs: this.instances[0]?.outputNames ?? [] }
  }

  get size(): number {
    return this.instances.length
  }

  get idle(): number {
    return this.instances.reduce((n, i) => (i.idle ? n + 1 : n), 0)
  }

  /** Runs a batch on an instance that is not running one; the batcher checks `idle` first. */
  run(feeds: TensorMap, outputs: string[]): Promise<RunResult> {
    const instance = this.instances.find((i) => !i.busy)
    if (!instance) return Promise.reject(new Error('no idle inference instance'))
    return instance.run(feeds, outputs)
  }

  async close(): Promise<void> {
    this.closed = true
    await Promise.all(this.instances.splice(0).map((i) => i.close()))
  }

  private startInstance(modelBytes: Uint8Array): Promise<Instance> {
    const { executionProviders, intraOpThreads, workerUrl } = this.options
    return ThreadInstance.start({ modelBytes, executionProviders, intraOpThreads }, threadEntry(workerUrl), this.replace)
  }

  private replace = (lost: Instance): void => {
    const at = this.instances.indexOf(lost)
    if (at === -1 || this.closed) return
    this.instances.splice(at, 1)
    verifiedModelBytes(this.options.modelPath, this.options.modelSha256)
      .then((bytes) => this.startInstance(bytes))
      .then(
        (fresh) => {
          if (this.closed) return void fresh.close()
          this.instances.push(fresh)
          this.events.restored()
        },
        (err: unknown) => this.events.failed(err instanceof Error ? err : new Error(String(err)), this.instances.length),
      )
  }
}
