import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'

/**
 * Every child the benchmark starts, and everything to undo on the way out. A benchmark that is
 * interrupted (Ctrl-C, a thrown error) must not leave servers or load generators eating the two
 * cores that the next run, or somebody else's tests, need.
 */

export interface Child {
  process: ChildProcess
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string | null>
  /** SIGTERM to the process group, SIGKILL if it is still there after `graceMs`. */
  stop(graceMs?: number): Promise<void>
}

const children = new Set<Child>()
const cleanups: Array<() => Promise<void> | void> = []

const alive = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null

/** Signals the child's whole process group (it leads one: spawned detached); falls back to the PID. */
const signalGroup = (child: ChildProcess, signal: NodeJS.Signals): void => {
  if (child.pid === undefined || !alive(child)) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // already gone
    }
  }
}

/**
 * Spawns a child in a process group of its own, so one signal reaches anything it starts and a
 * terminal's Ctrl-C reaches only us: we decide the order things stop in.
 */
export const spawnChild = (command: string, args: readonly string[], options: SpawnOptions = {}): Child => {
  const proc = spawn(command, args, { ...options, detached: true })
  const exited = new Promise<number | string | null>((resolve) => {
    proc.once('exit', (code, signal) => resolve(code ?? signal))
    // A spawn failure emits 'error' without 'exit'.
    proc.once('error', () => resolve(null))
  })
  const child: Child = {
    process: proc,
    exited,
    async stop(graceMs = 5_000) {
      signalGroup(proc, 'SIGTERM')
      const timer = setTimeout(() => signalGroup(proc, 'SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
      // The leader may be gone while members of its group linger.
      signalGroup(proc, 'SIGKILL')
    },
  }
  children.add(child)
  void exited.then(() => children.delete(child))
  return child
}

/**
 * Runs a child to its end and answers what it printed on stdout; a non-zero exit throws with
 * `what` and the tail of its stderr.
 */
export const runToEnd = async (what: string, command: string, args: readonly string[], options: Omit<SpawnOptions, 'stdio'> = {}): Promise<string> => {
  const child = spawnChild(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.process.stdout?.on('data', (d: Buffer) => (stdout += d.toString()))
  child.process.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4_000)))
  const code = await child.exited
  if (code !== 0) throw new Error(`${what} exited with ${code}: ${stderr}`)
  return stdout
}

/** Registers work to run when the benchmark ends, normally or not (temp directories). */
export const onCleanup = (work: () => Promise<void> | void): void => {
  cleanups.push(work)
}

/** Stops every child still running, then runs the cleanups, newest first. */
export const cleanUp = async (): Promise<void> => {
  await Promise.all([...children].map((c) => c.stop()))
  for (const work of cleanups.splice(0).reverse()) {
    try {
      await work()
    } catch (err) {
      process.stderr.write(`cleanup failed: ${err instanceof Error ? err.message : String(err)}\n`)
    }
  }
}

/**
 * Ctrl-C and SIGTERM stop the children before exiting; a last synchronous SIGKILL on 'exit'
 * catches anything left if the process ends some other way (process.exit in a library).
 */
let interruptedBy: NodeJS.Signals | undefined

/** The signal that stopped the benchmark, if one did: what fails after it is fallout, not news. */
export const interrupted = (): NodeJS.Signals | undefined => interruptedBy

export const installSignalHandlers = (): void => {
  const interrupt = (signal: NodeJS.Signals) => {
    if (interruptedBy) return
    interruptedBy = signal
    process.stderr.write(`\n${signal}: stopping child processes…\n`)
    void cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  process.on('SIGINT', interrupt)
  process.on('SIGTERM', interrupt)
  process.on('exit', () => {
    for (const child of children) signalGroup(child.process, 'SIGKILL')
  })
}

/** `work`, or a rejection naming `what` after `ms`: every wait on another system has a bound. */
export const within = async <T>(ms: number, what: string, work: Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`gave up waiting ${ms} ms for ${what}`)), ms)))
  try {
    return await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}
