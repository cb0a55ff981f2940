import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildProgram, commandPath } from '../../../tools/cli/program.ts'
import { MIN_NODE_MAJOR, nodeVersionProblem } from '../../../bin/node-version.mjs'
import { startUpstashAdapter } from '../../../dev/upstash-adapter/server.ts'
import { startRedisServer } from '../../dev/support/redis-server.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const BIN = join(ROOT, 'bin/edge-infer.mjs')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

const run = (args: readonly string[], env: NodeJS.ProcessEnv = {}, node = process.execPath): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(node, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.once('error', reject)
    child.once('exit', (code) => resolve({ code, stdout, stderr }))
  })

/** Every command of the tree, the root first: a command added later is covered without a change here. */
const everyCommand = (command: Command): Command[] => [command, ...command.commands.flatMap(everyCommand)]

const program = await buildProgram()
/** The words after `edge-infer` that name each command. */
const paths = everyCommand(program).map((c) => commandPath(c).split(' ').slice(1))

/** A handful of Node processes with tsx at a time: quick on 2 cores. */
const inTurns = async <T, R>(items: readonly T[], each: (item: T) => Promise<R>, width = 3): Promise<R[]> => {
  const results: R[] = []
  for (let i = 0; i < items.length; i += width) results.push(...(await Promise.all(items.slice(i, i + width).map(each))))
  return results
}

describe('edge-infer: every command', () => {
  it('walks a tree with the commands the issue names', () => {
    const names = paths.map((p) => p.join(' '))
    for (const name of ['start', 'models new', 'models manifest', 'models verify', 'models reload', 'keys create', 'keys list', 'keys revoke', 'load', 'capacity', 'simulate', 'demo canary', 'bench backend', 'bench edge', 'bench drift']) expect(names).toContain(name)
  })

  it('prints its usage on --help and exits 0, running nothing', async () => {
    const runs = await inTurns(paths, (path) => run([...path, '--help']))
    runs.forEach((r, i) => {
      const name = ['edge-infer', ...paths[i]].join(' ')
      expect(r.code, `${name} --help: ${r.stderr}`).toBe(0)
      expect(r.stdout).toContain(`Usage: ${name} `)
      expect(r.stderr).toBe('')
    })
  }, 180_000)

  it('refuses an unknown flag with one line naming its help and exit 2, no stack trace', async () => {
    const runs = await inTurns(paths, (path) => run([...path, '--no-such-flag']))
    runs.forEach((r, i) => {
      const name = ['edge-infer', ...paths[i]].join(' ')
      expect(r.code, `${name} --no-such-flag: ${r.stderr}`).toBe(2)
      expect(r.stderr).toBe(`error: unknown option '--no-such-flag' (see ${name} --help)\n`)
      expect(r.stdout).toBe('')
    })
  }, 180_000)

  it('refuses a bad value with one line and exit 2', async () => {
    const r = await run(['simulate', '--hours', 'many'])
    expect(r.code).toBe(2)
    expect(r.stderr).toBe('error: --hours must be a positive number, got "many" (see edge-infer simulate --help)\n')
  })
})

describe('edge-infer: the Node version check', () => {
  it('passes Node 24 and newer, and names the version otherwise in one line', () => {
    expect(nodeVersionProblem(`${MIN_NODE_MAJOR}.0.0`)).toBeUndefined()
    expect(nodeVersionProblem('25.1.2')).toBeUndefined()
    expect(nodeVersionProblem('20.20.2')).toBe('edge-infer needs Node 24 or newer (this is Node 20.20.2); run it through npm (npm ci brings Node 24) or install Node 24')
  })

  it.runIf(existsSync('/usr/bin/node'))('stops an older system Node with that one line and exit 1', async () => {
    const version = (await new Promise<string>((resolve) => {
      const child = spawn('/usr/bin/node', ['-p', 'process.versions.node'])
      let out = ''
      child.stdout.on('data', (d: Buffer) => (out += d.toString()))
      child.once('exit', () => resolve(out.trim()))
    }))
    const r = await run(['--help'], {}, '/usr/bin/node')
    if (nodeVersionProblem(version) === undefined) expect(r.code).toBe(0)
    else {
      expect(r.code).toBe(1)
      expect(r.stderr).toBe(`${nodeVersionProblem(version)}\n`)
    }
  })
})

describe('edge-infer keys list|revoke on the local keys file', () => {
  let dir: string
  let file: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'edge-infer-keys-'))
    file = join(dir, 'keys.json')
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  it('creates, lists, revokes, and refuses to revoke a name it does not hold', async () => {
    const env = { EDGE_INFER_LOCAL_KEYS: file }
    expect((await run(['keys', 'list'], env)).stdout).toBe(`no keys in ${file}\n`)
    for (const name of ['web', 'ios']) expect((await run(['keys', 'create', '--local', '--name', name, '--scopes', 'predict', '--env', 'local'], env)).code).toBe(0)
    const listed = await run(['keys', 'list', '--json'], env)
    expect(listed.code).toBe(0)
    expect((JSON.parse(listed.stdout) as Array<{ name: string }>).map((e) => e.name)).toEqual(['ios', 'web'])
    const table = await run(['keys', 'list'], env)
    expect(table.stdout.trim().split('\n').map((l) => l.split(/\s+/)[0])).toEqual(['ios', 'web'])
    // The keys themselves stay in the file: a listing shows entries only.
    const stored = JSON.parse(await readFile(file, 'utf8')) as { keys: Array<{ key: string }> }
    for (const { key } of stored.keys) expect(table.stdout).not.toContain(key)

    const revoked = await run(['keys', 'revoke', 'web'], env)
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(JSON.parse((await run(['keys', 'list', '--json'], env)).stdout)).toMatchObject([{ name: 'ios' }])
    const missing = await run(['keys', 'revoke', 'web'], env)
    expect(missing.code).toBe(2)
    expect(missing.stderr).toBe(`error: ${file} holds no key named "web" (see edge-infer keys revoke --help)\n`)
  }, 60_000)

  it('names a keys file that does not parse', async () => {
    await writeFile(join(dir, 'bad.json'), 'nope')
    const r = await run(['keys', 'list'], { EDGE_INFER_LOCAL_KEYS: join(dir, 'bad.json') })
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain('is not a local keys file')
  })
})

describe('edge-infer keys create|list|revoke --redis on the hash the edge reads', () => {
  it('lists the keys stored there and revokes one by name', async () => {
    const redis = await startRedisServer()
    const token = 'cli-keys-test-token-0123456789'
    const adapter = await startUpstashAdapter({ redisPort: redis.port, token })
    try {
      const env = { UPSTASH_REDIS_REST_URL: adapter.url, UPSTASH_REDIS_REST_TOKEN: token, API_KEYS: '' }
      for (const name of ['web', 'ios']) {
        const created = await run(['keys', 'create', '--redis', '--name', name, '--scopes', 'predict', '--json'], env)
        expect(created.code, created.stderr).toBe(0)
      }
      const listed = await run(['keys', 'list', '--redis', '--json'], env)
      expect(listed.code, listed.stderr).toBe(0)
      expect((JSON.parse(listed.stdout) as Array<{ name: string }>).map((e) => e.name)).toEqual(['ios', 'web'])
      const revoked = await run(['keys', 'revoke', '--redis', 'web'], env)
      expect(revoked.code, revoked.stderr).toBe(0)
      expect(JSON.parse((await run(['keys', 'list', '--redis', '--json'], env)).stdout)).toMatchObject([{ name: 'ios' }])
      expect((await run(['keys', 'revoke', '--redis', 'web'], env)).stderr).toBe('error: Redis hash "apikeys" holds no key named "web" (see edge-infer keys revoke --help)\n')
    } finally {
      await adapter.close()
      await redis.stop()
    }
  }, 60_000)
})
