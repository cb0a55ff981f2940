import { execFile } from 'node:child_process'
import { cp, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { creditRequest } from './backend/support/applicants.ts'
import { post, startBackend } from './backend/support/backend-process.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const run = promisify(execFile)
let clone: string

/** npm itself, run by this Node (npm sets npm_execpath for the scripts it runs). */
const npm = (args: string[], cwd: string) => {
  const [command, prefix] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []]
  return run(command, [...prefix, ...args, '--no-audit', '--no-fund', '--prefer-offline'], {
    cwd,
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
    maxBuffer: 16 * 1024 * 1024,
  })
}

/**
 * The production path from a fresh copy of the tree (what git tracks, and new files it does not
 * ignore): install, `npm run build`, reinstall with production dependencies only, run dist/.
 */
beforeAll(async () => {
  clone = await mkdtemp(join(tmpdir(), 'edge-infer-build-'))
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 })
  const files = stdout.split('\0').filter(Boolean)
  await Promise.all(files.map((file) => cp(join(ROOT, file), join(clone, file), { recursive: true }).catch((err: NodeJS.ErrnoException) => {
    // A file deleted in the working tree but still tracked is simply not part of this copy.
    if (err.code !== 'ENOENT') throw err
  })))
  await npm(['ci'], clone)
  await npm(['run', 'build'], clone)
  await npm(['ci', '--omit=dev'], clone)
}, 600_000)

afterAll(async () => {
  if (clone) await rm(clone, { recursive: true, force: true })
})

describe('npm run build, then npm ci --omit=dev', () => {
  it('leaves no development tool installed', async () => {
    const installed = await readdir(join(clone, 'node_modules'))
    expect(installed).toContain('onnxruntime-node')
    for (const tool of ['tsx', 'typescript', 'vitest', 'wrangler', 'miniflare', 'node']) expect(installed).not.toContain(tool)
  })

  it('serves the bundled models from `node dist/backend/server.js`, inference in its compiled worker thread, and stops cleanly', async () => {
    const backend = await startBackend({}, { args: ['dist/backend/server.js'], cwd: clone })
    try {
      const res = await post<{ model_version: string; outputs: Array<{ shape: number[] }> }>(`${backend.url}/v2/models/credit-risk/infer`, creditRequest(3))
      expect(res.status).toBe(200)
      expect(res.body.model_version).toBe('2')
      expect(res.body.outputs[0]!.shape).toEqual([3, 2])
    } finally {
      expect(await backend.stop()).toBe(0)
    }
  })

  it('runs the Lambda handler and keys:create from dist/', async () => {
    // A script file, not `node -e`: the executor's worker threads inherit the process's execArgv.
    await writeFile(join(clone, 'invoke-lambda.mjs'), [
      "const { handler, shutdownLambda } = await import('./dist/backend/lambda.js')",
      `const out = await handler(${JSON.stringify({ model_name: 'credit-risk', ...creditRequest(1) })})`,
      'console.log(JSON.stringify(out))',
      'await shutdownLambda()',
    ].join('\n'))
    const lambda = await run(process.execPath, ['invoke-lambda.mjs'], { cwd: clone, env: { ...process.env, MODEL_REPOSITORY: join(clone, 'models'), LOG_LEVEL: 'error' } })
    expect(JSON.parse(lambda.stdout.trim().split('\n').at(-1)!)).toMatchObject({ model_name: 'credit-risk', outputs: [{ shape: [1, 2] }] })
    const key = await run(process.execPath, ['dist/infra/keys/create-key.js', '--name', 'web', '--scopes', 'predict', '--json'], { cwd: clone })
    expect(JSON.parse(key.stdout)).toMatchObject({ key: expect.stringMatching(/^ei_live_/), entry: { name: 'web', scopes: ['predict'] } })
  })
})
