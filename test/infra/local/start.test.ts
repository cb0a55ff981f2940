import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../support/ports.ts'

/** Pulls the URL, headers and body out of the printed curl line, as a person pasting it would run it. */
const parseCurl = (line: string) => {
  const url = /curl -s (\S+)/.exec(line)?.[1]
  const headers = Object.fromEntries([...line.matchAll(/-H '([^:]+): ([^']+)'/g)].map((m) => [m[1], m[2]]))
  const body = /-d '(.+)'$/.exec(line.trim())?.[1]
  return { url: url!, headers, body: body! }
}

describe('npm start', () => {
  it('brings up backend and edge, prints a request that works as pasted, and stops everything on SIGTERM', async () => {
    const [backendPort, edgePort] = [await freePort(), await freePort()]
    const child = spawn(process.execPath, ['--import', 'tsx', 'infra/local/start.ts'], {
      env: { ...process.env, BACKEND_PORT: String(backendPort), EDGE_PORT: String(edgePort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      const curl = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on('line', (line) => line.trim().startsWith('curl -s') && resolve(line))
        void exited.then((code) => reject(new Error(`npm start exited early (${code})`)))
      })
      const { url, headers, body } = parseCurl(curl)
      expect(url).toBe(`http://127.0.0.1:${edgePort}/v1/models/credit-risk/predict`)
      const res = await fetch(url, { method: 'POST', headers, body })
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ model: 'credit-risk', version: '2', predictions: [{ label: expect.stringMatching(/risk$/) }] })
    } finally {
      child.kill('SIGTERM')
      await exited
    }
    const stillUp = await fetch(`http://127.0.0.1:${backendPort}/v2/health/live`).then(() => true, () => false)
    const edgeUp = await fetch(`http://127.0.0.1:${edgePort}/healthz`).then(() => true, () => false)
    expect([stillUp, edgeUp]).toEqual([false, false])
  })
})
