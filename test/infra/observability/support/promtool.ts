import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface ToolResult {
  code: number
  output: string
}

/** Runs promtool (Debian package `prometheus`) in `cwd`; resolves with its exit code and output, never throws on a failed check. */
export const promtool = async (args: string[], cwd: string): Promise<ToolResult> => {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd, timeout: 60_000 })
    return { code: 0, output: stdout + stderr }
  } catch (err) {
    const failed = err as { code?: number; stdout?: string; stderr?: string }
    if (typeof failed.code !== 'number') throw err
    return { code: failed.code, output: (failed.stdout ?? '') + (failed.stderr ?? '') }
  }
}
