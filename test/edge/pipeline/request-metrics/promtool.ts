import { spawn } from 'node:child_process'

/**
 * `promtool check metrics` (Debian package `prometheus`) on an exposition: its lint findings, one
 * per line; empty when it has none. Bounded: promtool is killed after `timeoutMs`.
 */
export const promtoolCheckMetrics = (exposition: string, timeoutMs = 30_000): Promise<{ code: number | null; findings: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'], timeout: timeoutMs })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, findings: output.trim() }))
    child.stdin.end(exposition)
  })
