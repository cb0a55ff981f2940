import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

export interface CommandRun {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs a load command's entry as its npm script does (the project's Node, tsx) in a process group
 * of its own, stopped (with everything it started) if it outlives `timeoutMs`.
 */
export const runCommand = (entry: string, args: readonly string[], timeoutMs: number): Promise<CommandRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM')
      reject(new Error(`${entry} ${args.join(' ')} did not finish in ${timeoutMs} ms: ${stderr.slice(-1_000)}`))
    }, timeoutMs)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
