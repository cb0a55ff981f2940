/** One JSON line on stdout, timestamped: how the local dev servers report. */
export const logLine = (entry: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`)
}

export interface PortOptions {
  /** The port when the variable is unset: 0 is any free one. */
  fallback?: number
  /** Whether 0 (any free port) is a valid answer: not where the port is printed for a person to use. */
  anyFree?: boolean
  env?: NodeJS.ProcessEnv
}

/** The listen port in env var `name`, or `fallback` when unset; throws naming the variable otherwise. */
export const portFromEnv = (name: string, { fallback = 0, anyFree = true, env = process.env }: PortOptions = {}): number => {
  const text = env[name] ?? String(fallback)
  const port = Number(text)
  const lowest = anyFree ? 0 : 1
  if (!Number.isInteger(port) || port < lowest || port > 65_535) throw new Error(`${name}=${JSON.stringify(text)} is not a port (${lowest}-65535)`)
  return port
}

/**
 * Runs a local dev server as a process: `start` brings it up (and logs where it listens) and
 * resolves with how to close it; SIGINT/SIGTERM close it once and exit 0 (1 if closing fails); a
 * failed start is logged and exits 1.
 */
export const runServerProcess = (start: () => Promise<() => Promise<void>>): void => {
  start().then(
    (close) => {
      let stopping = false
      const stop = (signal: string) => {
        if (stopping) return
        stopping = true
        logLine({ level: 'info', msg: 'stopping', signal })
        close().then(() => process.exit(0), () => process.exit(1))
      }
      process.on('SIGINT', () => stop('SIGINT'))
      process.on('SIGTERM', () => stop('SIGTERM'))
    },
    (error: unknown) => {
      logLine({ level: 'error', msg: 'failed to start', error: error instanceof Error ? error.message : String(error) })
      process.exit(1)
    },
  )
}
