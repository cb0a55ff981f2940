import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { createInterface } from 'node:readline'
import { describe, expect, it } from 'vitest'
import { LOCAL_DEV_KEY, readLocalKeys } from '../../dev/local-keys.ts'
import { freePort } from '../support/ports.ts'

/** Pulls the URL, headers and body out of the printed curl line, as a person pasting it would run it. */
const parseCurl = (line: string) => {
  const url = /curl -s (\S+)/.exec(line)?.[1]
  const headers = Object.fromEntries([...line.matchAll(/-H '([^:]+): ([^']+)'/g)].map((m) => [m[1], m[2]]))
  const body = /-d '(.+)'$/.exec(line.trim())?.[1]
  return { url: url!, headers, body: body! }
}

/** `npm start` as a child on the given ports, every line it prints collected. */
const startStack = (ports: { backend: number; edge: number }) => {
  // As a person runs it: vitest's NODE_ENV=test would switch off behaviour (wrangler's Request.cf lookup) a user meets.
  const { NODE_ENV: _vitest, ...userEnv } = process.env
  const child = spawn(process.execPath, ['--import', 'tsx', 'dev/start.ts'], {
    env: { ...userEnv, BACKEND_PORT: String(ports.backend), EDGE_PORT: String(ports.edge) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line))
  createInterface({ input: child.stderr! }).on('line', (line) => lines.push(line))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  /** The first printed line that matches, or a rejection if the stack exits first. */
  const line = (pattern: RegExp) =>
    new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const found = lines.find((l) => pattern.test(l))
        if (found) {
          clearInterval(timer)
          resolve(found)
        }
      }, 50)
      void exited.then((code) => {
        clearInterval(timer)
        reject(new Error(`npm start exited (${code}) before printing ${pattern}:\n${lines.join('\n')}`))
      })
    })
  return { child, lines, exited, line }
}

const occupy = async (port: number): Promise<Server> => {
  const server = createServer((socket) => socket.end())
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  return server
}

describe('npm start', () => {
  it('brings up backend and edge, prints a request that works as pasted and no stack trace, and exits 0 on SIGTERM with nothing left running', async () => {
    const ports = { backend: await freePort(), edge: await freePort() }
    const stack = startStack(ports)
    let code: number | null
    try {
      const { url, headers, body } = parseCurl(await stack.line(/^\s*curl -s/))
      expect(url).toBe(`http://127.0.0.1:${ports.edge}/v1/models/credit-risk/predict`)
      const res = await fetch(url, { method: 'POST', headers, body })
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ model: 'credit-risk', version: '2', predictions: [{ label: expect.stringMatching(/risk$/) }] })
    } finally {
      stack.child.kill('SIGTERM')
      code = await stack.exited
    }
    expect(code).toBe(0)
    expect(stack.lines.filter((l) => /\sat .+:\d+:\d+\)?$|ENOTFOUND|Error:/.test(l)), stack.lines.join('\n')).toEqual([])
    const stillUp = await fetch(`http://127.0.0.1:${ports.backend}/v2/health/live`).then(() => true, () => false)
    const edgeUp = await fetch(`http://127.0.0.1:${ports.edge}/healthz`).then(() => true, () => false)
    expect([stillUp, edgeUp]).toEqual([false, false])
  })

  it('prints the same local key after a restart, the one kept in the local keys file', async () => {
    const keyOf = async () => {
      const ports = { backend: await freePort(), edge: await freePort() }
      const stack = startStack(ports)
      try {
        return /: (ei_local_\S+)$/.exec(await stack.line(/^local API key/))?.[1]
      } finally {
        stack.child.kill('SIGTERM')
        await stack.exited
      }
    }
    const first = await keyOf()
    expect(first).toMatch(/^ei_local_/)
    expect(await keyOf()).toBe(first)
    expect(readLocalKeys().keys.find((k) => k.entry.name === LOCAL_DEV_KEY)?.key).toBe(first)
  })

  it('exits 1 and stops the edge when the backend dies on its own', async () => {
    const ports = { backend: await freePort(), edge: await freePort() }
    const stack = startStack(ports)
    try {
      await stack.line(/^edge-infer is up/)
      const pid = Number(/\[backend\] pid (\d+)/.exec(await stack.line(/^\[backend\] pid/))?.[1])
      process.kill(pid, 'SIGKILL')
      expect(await stack.exited).toBe(1)
    } finally {
      stack.child.kill('SIGTERM')
      await stack.exited
    }
    expect(stack.lines).toContain('[backend] exited (SIGKILL); stopping the stack')
    expect(await fetch(`http://127.0.0.1:${ports.edge}/healthz`).then(() => true, () => false)).toBe(false)
  })

  it.each(['BACKEND_PORT', 'EDGE_PORT'] as const)('refuses at once, exit 1, when the port of %s is taken, naming the port and the variable', async (variable) => {
    const ports = { backend: await freePort(), edge: await freePort() }
    const taken = variable === 'BACKEND_PORT' ? ports.backend : ports.edge
    const squatter = await occupy(taken)
    try {
      const stack = startStack(ports)
      expect(await stack.exited).toBe(1)
      // The squatter is this test's own process: named by its pid, with the command that stops its group.
      expect(stack.lines).toContainEqual(expect.stringMatching(new RegExp(`^npm start failed: .* \\(pid ${process.pid}\\) holds port ${taken}; stop it with \`kill -- -\\d+\`, or set ${variable} to another port$`)))
      expect(stack.lines.some((l) => l.startsWith('edge-infer is up') || l.includes('[backend] pid'))).toBe(false)
    } finally {
      await new Promise((resolve) => squatter.close(resolve))
    }
  })
})
