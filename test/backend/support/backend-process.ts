import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

export interface BackendProcess {
  url: string
  child: ChildProcess
  /** Every JSON log line the server wrote so far. */
  logs: Array<Record<string, unknown>>
  /** Sends a signal and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
  exited: Promise<number | null>
}

export interface StartOptions {
  waitReady?: boolean
  /** What Node runs, from `cwd`: the TypeScript source under tsx unless a build is named. */
  args?: string[]
  cwd?: string
}

/** Starts the real server (`tsx backend/server.ts`) on a free port and waits for it to listen. */
export const startBackend = async (env: Record<string, string>, { waitReady = true, args = ['--import', 'tsx', 'backend/server.ts'], cwd = ROOT }: StartOptions = {}): Promise<BackendProcess> => {
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const logs: Array<Record<string, unknown>> = []
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>
        logs.push(entry)
        if (entry.msg === 'listening') resolve(String(entry.url))
      } catch {
        // not a log line
      }
    })
    void exited.then((code) => reject(new Error(`backend exited with ${code} before listening: ${stderr}`)))
  })
  const backend: BackendProcess = {
    url,
    child,
    logs,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      return exited
    },
  }
  if (waitReady) await until(async () => (await fetch(`${url}/v2/health/ready`)).ok)
  return backend
}

/** Polls until the check passes (bounded by count, not by a timing assertion). */
export const until = async (check: () => Promise<boolean> | boolean, { tries = 600, everyMs = 50 } = {}): Promise<void> => {
  for (let i = 0; i < tries; i++) {
    if (await check()) return
    await new Promise((r) => setTimeout(r, everyMs))
  }
  throw new Error('condition not reached')
}

export interface JsonResponse<T = Record<string, unknown>> {
  status: number
  headers: Headers
  body: T
}

/** POSTs JSON (or a raw string) and reads the JSON answer. */
export const post = async <T = Record<string, unknown>>(url: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse<T>> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, body: (await res.json()) as T }
}
