import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { runToEnd, spawnChild, type Child } from './processes.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface ServerProcess {
  url: string
  child: Child
  stop(): Promise<void>
}

const STDERR_TAIL = 4_000

/** Node's arguments for a TypeScript entry of this repository, loaded through tsx. */
const tsxArgs = (entry: string): string[] => ['--import', 'tsx', entry]

/**
 * Runs a TypeScript entry (a benchmark's child, such as `load/bench/edge/pipeline-child.ts`) to its end
 * under the Node binary `node` and answers its stdout; `what` names it if it fails.
 */
export const runEntry = (what: string, node: string, entry: string, env: Record<string, string>): Promise<string> =>
  runToEnd(`${what} (${node})`, node, tsxArgs(entry), { cwd: ROOT, env: { ...process.env, ...env } })

/**
 * Starts a TypeScript entry (`backend/server.ts`, `load/bench/backend/http-ceiling.ts`) under tsx and the Node
 * binary `node` on a free port; see startListening.
 */
export const startServer = (entry: string, env: Record<string, string>, node = process.execPath): Promise<ServerProcess> =>
  startListening(entry, node, tsxArgs(entry), env)

/**
 * Starts a server process (`what` names it in errors) on a free port and resolves with the URL
 * from its `listening` log line, the same way the backend's own integration tests find it. The
 * server keeps logging, so stdout is read to the end: a full pipe would stall its event loop
 * mid-benchmark.
 */
export const startListening = async (what: string, command: string, args: readonly string[], env: Record<string, string>): Promise<ServerProcess> => {
  const child = spawnChild(command, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.process.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-STDERR_TAIL)))
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.process.stdout! }).on('line', (line) => {
      const entry = parseLogLine(line)
      if (entry?.msg === 'listening' && typeof entry.url === 'string') resolve(entry.url)
      if (entry?.level === 'error') process.stderr.write(`  [${entry.msg}] ${String(entry.error ?? '')}\n`)
    })
    void child.exited.then((code) => reject(new Error(`${what} exited (${code}) before listening: ${stderr}`)))
  })
  return { url, child, stop: () => child.stop() }
}

const parseLogLine = (line: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(line)
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/**
 * Throws if the server is gone. A run against a dead server measures connection errors, not the
 * server; on a shared machine something else may also have stopped it.
 */
export const assertAlive = (server: ServerProcess, during: string): void => {
  const { exitCode, signalCode } = server.child.process
  if (exitCode !== null || signalCode !== null) throw new Error(`server ${server.url} exited (${exitCode ?? signalCode}) during ${during}`)
}

/** Polls `/v2/health/ready` until it answers 200: pinned models are loaded and warm. */
export const waitReady = async (url: string, { timeoutMs = 120_000, everyMs = 100 } = {}): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ok = await fetch(`${url}/v2/health/ready`).then((r) => r.ok, () => false)
    if (ok) return
    if (Date.now() > deadline) throw new Error(`${url} not ready after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

/**
 * Sends one infer request and returns the response text. For a model that is not pinned this is
 * also what makes the server load and warm it, so the load never lands inside a measured run.
 */
export const primeInfer = async (url: string, body: string | Uint8Array, headers: Readonly<Record<string, string>> = {}): Promise<string> => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })
  const text = await res.text()
  if (!res.ok) throw new Error(`priming ${url} answered ${res.status}: ${text.slice(0, 500)}`)
  return text
}
