import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { createServer } from 'node:net'
import { createInterface } from 'node:readline'
import { describe, expect, it } from 'vitest'
import { commandLine, launchers, portHolder, processStat } from '../../dev/lifecycle.ts'
import { assertPortFree } from '../../dev/stack-checks.ts'
import { freePort } from '../support/ports.ts'

const LEASH = 'dev/leash.mjs'
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Whether a process is alive as the one first seen (its pid not reused). */
const alive = (pid: number, startTime: string | undefined) => startTime !== undefined && processStat(pid)?.startTime === startTime

/** Every descendant of `root`, by walking /proc's parent links. */
const descendants = (root: number): Array<{ pid: number; startTime: string }> => {
  const stats = readdirSync('/proc').map(Number).filter(Number.isInteger).map((pid) => processStat(pid)).filter((s) => s !== undefined)
  const found: Array<{ pid: number; startTime: string }> = []
  const walk = (pid: number) => {
    for (const s of stats) if (s.ppid === pid) (found.push({ pid: s.pid, startTime: s.startTime }), walk(s.pid))
  }
  walk(root)
  return found
}

/** Waits until none of `processes` is alive; answers those still alive after `ms`. */
const gone = async (processes: Array<{ pid: number; startTime: string }>, ms = 20_000): Promise<number[]> => {
  const until = Date.now() + ms
  let left = processes
  while (left.length > 0 && Date.now() < until) {
    await pause(200)
    left = left.filter((p) => alive(p.pid, p.startTime))
  }
  return left.map((p) => p.pid)
}

describe('dev/leash.mjs', () => {
  const leashed = () => {
    // A command that starts a grandchild of its own, as wrangler starts workerd.
    const leash = spawn(process.execPath, [LEASH, 'sh', '-c', 'sleep 300 & sleep 300'], { stdio: ['pipe', 'ignore', 'ignore', 'pipe'] })
    const commandPid = new Promise<number>((resolve) => {
      let text = ''
      leash.stdio[3]!.on('data', (c: Buffer) => (text += c.toString()))
      leash.stdio[3]!.on('end', () => resolve(Number(text)))
    })
    const exited = new Promise<number | null>((resolve) => leash.once('exit', (code) => resolve(code)))
    return { leash, commandPid, exited }
  }

  it('stops the command and everything it started when its starter is gone (its stdin closes)', async () => {
    const { leash, commandPid, exited } = leashed()
    const pid = await commandPid
    await pause(300)
    const group = descendants(leash.pid!)
    expect(group.map((p) => p.pid)).toContain(pid)
    expect(group.length).toBeGreaterThanOrEqual(3)
    leash.stdin!.destroy()
    expect(await exited).toBe(0)
    expect(await gone(group)).toEqual([])
  })

  for (const signal of ['SIGHUP', 'SIGINT', 'SIGTERM'] as const) {
    it(`stops the command's group on ${signal}`, async () => {
      const { leash, commandPid, exited } = leashed()
      await commandPid
      await pause(300)
      const group = descendants(leash.pid!)
      leash.kill(signal)
      await exited
      expect(await gone(group)).toEqual([])
    })
  }

  it('refuses to run without a command, with usage and exit 2', async () => {
    const leash = spawn(process.execPath, [LEASH], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    leash.stderr!.on('data', (c: Buffer) => (stderr += c.toString()))
    expect(await new Promise((resolve) => leash.once('exit', resolve))).toBe(2)
    expect(stderr).toMatch(/^usage: /)
  })
})

describe('dev/lifecycle.ts', () => {
  it('names the process that holds a port, and assertPortFree says how to stop it', async () => {
    const port = await freePort()
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
    try {
      expect(portHolder(port)).toMatchObject({ pid: process.pid, pgrp: processStat(process.pid)!.pgrp })
      await expect(assertPortFree(port, 'EDGE_PORT')).rejects.toThrow(new RegExp(`\\(pid ${process.pid}\\) holds port ${port}; stop it with \`kill -- -\\d+\`, or set EDGE_PORT`))
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
    expect(portHolder(port)).toBeUndefined()
  })

  it('names a stack left over from an earlier run as such', async () => {
    const port = await freePort()
    // A process whose command line is the backend's, holding the port as a leftover backend would.
    const leftover = spawn(process.execPath, ['-e', `require('node:net').createServer().listen(${port}, '127.0.0.1', () => console.log('up'))`, 'backend/server.ts'], { stdio: ['ignore', 'pipe', 'ignore'] })
    try {
      await new Promise((resolve) => leftover.stdout!.once('data', resolve))
      await expect(assertPortFree(port, 'BACKEND_PORT')).rejects.toThrow(new RegExp(`^edge-infer from an earlier run \\(pid ${leftover.pid}\\) holds port ${port}; stop it with \`kill -- -${processStat(leftover.pid!)!.pgrp}\``))
    } finally {
      leftover.kill()
    }
  })

  it('finds the launchers in its own process group, nearest first', () => {
    const own = processStat(process.pid)!
    for (const launcher of launchers()) expect(launcher.pgrp).toBe(own.pgrp)
    const first = launchers()[0]
    if (first !== undefined) expect(first.pid).toBe(own.ppid)
  })
})

/** `npm start` as a terminal runs it: its own process group (a job), npm → dev/start.ts. */
const npmStart = async () => {
  const ports = { backend: await freePort(), edge: await freePort() }
  const { NODE_ENV: _vitest, ...userEnv } = process.env
  const npm = spawn('npm', ['start'], { env: { ...userEnv, BACKEND_PORT: String(ports.backend), EDGE_PORT: String(ports.edge), CONTROLLER_TICK_S: '0' }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const lines: string[] = []
  createInterface({ input: npm.stdout! }).on('line', (l) => lines.push(l))
  createInterface({ input: npm.stderr! }).on('line', (l) => lines.push(l))
  const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()))
  for (let i = 0; i < 600 && !lines.some((l) => l.startsWith('edge-infer is up')); i++) await pause(100)
  if (!lines.some((l) => l.startsWith('edge-infer is up'))) throw new Error(`npm start did not come up:\n${lines.join('\n')}`)
  const everything = [{ pid: npm.pid!, startTime: processStat(npm.pid!)!.startTime }, ...descendants(npm.pid!)]
  // The chain from npm down to the start script (the process whose children are leashes).
  const chain = [npm.pid!]
  for (let pid = npm.pid!; ; ) {
    const children = everything.filter((p) => processStat(p.pid)?.ppid === pid)
    if (children.length === 0 || children.some((c) => commandLine(c.pid)?.includes('leash.mjs'))) break
    pid = children[0].pid
    chain.push(pid)
  }
  return { ports, npm, lines, exited, everything, chain }
}

const portsFree = async (ports: { backend: number; edge: number }) => {
  const free = async (port: number) => assertPortFree(port, 'X').then(() => true, () => false)
  return [await free(ports.backend), await free(ports.edge)]
}

describe('npm start lives and dies with its terminal', () => {
  // npm and the start script (the script execs node, so no shell stands between them): a signal to
  // either, or kill -9 of the start script, stops everything. Ctrl-C and a closed terminal signal
  // the whole job; a process manager or an IDE's stop button signals npm alone.
  const cases: Array<[string, NodeJS.Signals, number]> = [
    ['npm', 'SIGINT', 0],
    ['npm', 'SIGTERM', 0],
    ['npm', 'SIGHUP', 0],
    ['the start script', 'SIGHUP', 1],
    ['the start script', 'SIGINT', 1],
    ['the start script', 'SIGKILL', 1],
  ]
  for (const [who, signal, depth] of cases) {
    it(`${signal} to ${who} leaves no process and no port behind`, async () => {
      const stack = await npmStart()
      try {
        expect(stack.chain.map((pid) => commandLine(pid))).toEqual([expect.stringMatching(/npm/), expect.stringMatching(/--import tsx dev\/start\.ts/)])
        expect(stack.everything.length).toBeGreaterThanOrEqual(7)
        process.kill(stack.chain[depth], signal)
        expect(await gone(stack.everything, 30_000), stack.lines.join('\n')).toEqual([])
        expect(await portsFree(stack.ports)).toEqual([true, true])
      } finally {
        try {
          process.kill(-stack.npm.pid!, 'SIGKILL')
        } catch {
          // already gone, as it should be
        }
        for (const p of stack.everything) if (alive(p.pid, p.startTime)) process.kill(p.pid, 'SIGKILL')
      }
    })
  }
})
