import { spawn } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { freePort } from '../support/ports.ts'

describe('npm run demo:canary', () => {
  // About half a minute on a quiet machine; the generous bound is for a busy one.
  it('shows a canary promoted, one rolled back after 3 critical windows, a label-flipped one rolled back on realized accuracy and one rolled back for NaN, then stops its stack', async () => {
    const [backendPort, edgePort] = [await freePort(), await freePort()]
    const child = spawn(process.execPath, ['--import', 'tsx', 'dev/demo-canary.ts'], {
      env: { ...process.env, BACKEND_PORT: String(backendPort), EDGE_PORT: String(edgePort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d))
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code, output).toBe(0)
    const rounds = output.split('\n').filter((l) => l.startsWith('round '))
    const decisions = rounds.map((l) => /→ (step|promote|hold|rollback|alert) /.exec(l)?.[1] ?? l)
    // The NaN canary is reached only by the users its 1% of buckets (a random seed) takes: a round
    // whose users all miss it has no canary data yet, and holds for that reason alone.
    const nanAct = rounds.slice(8)
    const waited = nanAct.slice(0, -1)
    for (const line of waited) expect(line).toMatch(/→ hold .*waiting for data/)
    expect(decisions).toEqual(['step', 'step', 'step', 'promote', 'hold', 'hold', 'rollback', 'rollback', ...waited.map(() => 'hold'), 'rollback'])
    expect(waited.length, output).toBeLessThanOrEqual(1)
    expect(output).toContain('weights now: stable v2 100%\n')
    expect(output).toContain('prediction drift critical for 3 windows')
    expect(output).toMatch(/canary realized accuracy 0\.\d+ is worse than stable's/)
    expect(output).toMatch(/canary produced \d+ NaN\/Inf outputs/)
    const up = await Promise.all([`http://127.0.0.1:${backendPort}/v2/health/live`, `http://127.0.0.1:${edgePort}/healthz`].map((u) => fetch(u).then(() => true, () => false)))
    expect(up).toEqual([false, false])
    // It ends saying the stack is stopped, with no command against it.
    expect(output.trimEnd().split('\n').at(-1)).toMatch(/^The stack is stopped\. .*--keep/)
    expect(output).not.toContain('<the key npm start printed>')
  }, 240_000)

  it('with --keep (edge-infer demo canary), leaves the stack and console up with the key printed until SIGINT', async () => {
    const [backendPort, edgePort] = [await freePort(), await freePort()]
    const edgeUrl = `http://127.0.0.1:${edgePort}`
    const child = spawn(process.execPath, ['bin/edge-infer.mjs', 'demo', 'canary', '--keep'], {
      env: { ...process.env, BACKEND_PORT: String(backendPort), EDGE_PORT: String(edgePort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    let output = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d))
    const key = await new Promise<string>((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        output += d
        const found = /^The stack stays up: edge \S+, local API key (\S+)$/m.exec(output)?.[1]
        if (found !== undefined && output.includes('Ctrl-C')) resolve(found)
      })
      void exited.then(() => reject(new Error(`the demo exited before it said the stack stays up: ${output}`)))
    })
    try {
      expect(output).toContain(`curl -s ${edgeUrl}/v1/models/credit-risk/rollout/history -H 'x-api-key: ${key}'`)
      const history = await fetch(`${edgeUrl}/v1/models/credit-risk/rollout/history`, { headers: { 'x-api-key': key } })
      expect(history.status).toBe(200)
      expect((await fetch(`${edgeUrl}/console`)).status).toBe(200)
    } finally {
      child.kill('SIGINT')
    }
    expect(await exited, output).toBe(0)
    const up = await Promise.all([`http://127.0.0.1:${backendPort}/v2/health/live`, `${edgeUrl}/healthz`].map((u) => fetch(u).then(() => true, () => false)))
    expect(up).toEqual([false, false])
  }, 240_000)
})
