import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { freePort } from '../../support/ports.ts'

export interface RedisServer {
  port: number
  url: string
  pid: number
  child: ChildProcess
  /** Sends a signal by PID (SIGSTOP/SIGCONT included); does not wait. */
  signal(signal: NodeJS.Signals): void
  /** Kills the process (SIGKILL by default) and resolves once it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>
}


/**
 * Starts a throwaway `redis-server` (no persistence) and resolves once it logs
 * "Ready to accept connections". Uses `port` if given (to restart on the same one).
 */
export const startRedisServer = async (port?: number): Promise<RedisServer> => {
  const chosen = port ?? (await freePort())
  const child = spawn('redis-server', [
    '--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'notice',
  ], { stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  let output = ''
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()))
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output += `${line}\n`
      if (line.includes('Ready to accept connections')) resolve()
    })
    child.once('error', reject)
    void exited.then(() => reject(new Error(`redis-server exited before it was ready:\n${output}`)))
  })
  const pid = child.pid!
  return {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    pid,
    child,
    signal: (signal) => {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, signal)
    },
    stop: async (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, signal)
      await exited
    },
  }
}
