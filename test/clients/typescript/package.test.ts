import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createServer } from 'node:http'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'
import { describe, expect, it } from 'vitest'
import { listen } from '../../../dev/http-server.ts'
import { bundledWorkerOptions } from '../../../dev/workerd.ts'

/**
 * The client package's shape: what a browser, a Worker or React Native would load. Bundled by
 * esbuild for no platform in particular (a Node built-in would not resolve), minified and gzipped,
 * it stays under 10 KB; its own tsconfig checks it with the DOM's types and none of Node's; the
 * bundle runs in workerd as a Worker would load it.
 */

const PACKAGE = fileURLToPath(new URL('../../../clients/typescript/', import.meta.url))
const LIMIT_BYTES = 10 * 1024

const bundle = async (contents: string) => {
  const result = await build({
    stdin: { contents, resolveDir: PACKAGE, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'neutral',
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  return { code: result.outputFiles[0]!.contents, metafile: result.metafile }
}

describe('the client package (clients/typescript/)', () => {
  it('is under 10 KB minified and gzipped, with no import left over (no Node built-in, no dependency)', async () => {
    const { code, metafile } = await bundle(`export * from './src/index.ts'`)
    expect(gzipSync(code).length).toBeLessThan(LIMIT_BYTES)
    expect(Object.values(metafile.outputs).flatMap((o) => o.imports)).toEqual([])
  })

  it('is tree-shakeable: importing one error class leaves the client out', async () => {
    const whole = await bundle(`export * from './src/index.ts'`)
    const one = await bundle(`export { ProblemError } from './src/index.ts'`)
    expect(one.code.length).toBeLessThan(whole.code.length / 2)
    expect(new TextDecoder().decode(one.code)).not.toContain('x-request-deadline-ms')
  })

  it('declares ESM, no side effects, its exports and types', async () => {
    const manifest = JSON.parse(await readFile(`${PACKAGE}package.json`, 'utf8')) as Record<string, unknown>
    expect(manifest).toMatchObject({ type: 'module', sideEffects: false, types: './dist/index.d.ts', exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } } })
    expect(manifest.dependencies ?? {}).toEqual({})
  })

  it('type-checks with the DOM\'s types and none of Node\'s', async () => {
    const tsc = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url))
    await expect(promisify(execFile)(process.execPath, [tsc, '-p', PACKAGE, '--noEmit'])).resolves.toBeDefined()
  })
})

describe('the client package in workerd', () => {
  it('runs in a Worker: a call, its retry on 503 and its typed refusal', async () => {
    // A real server the Worker calls: 503 (with Retry-After: 0) once, then the list; 404 for an unknown model.
    let sends = 0
    const server = createServer((req, res) => {
      sends++
      if (req.url === '/v1/models' && sends === 1) return void res.writeHead(503, { 'retry-after': '0', 'content-type': 'application/problem+json' }).end('{"type":"https://edge-infer.dev/problems/x","title":"Service Unavailable","status":503,"detail":"later"}')
      if (req.url === '/v1/models') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"models":[{"name":"m","href":"/v1/models/m"}]}')
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"type":"https://edge-infer.dev/problems/not-found","title":"Not Found","status":404,"detail":"no such model","errors":[{"path":"model","message":"unknown"}]}')
    })
    const url = await listen(server, 0, '127.0.0.1')
    const { code } = await bundle(`
      import { createClient, ProblemError } from './src/index.ts'
      export default {
        async fetch(request) {
          const client = createClient({ baseUrl: new URL(request.url).searchParams.get('edge') })
          const list = await client.models.list({ timeoutMs: 5000 })
          const refusal = await client.models.describe('nope').catch((err) => err)
          return Response.json({ list, refused: refusal instanceof ProblemError, name: refusal.name, status: refusal.status, fieldPaths: refusal.fieldPaths })
        },
      }
    `)
    const dir = await mkdtemp(join(tmpdir(), 'client-worker-'))
    await writeFile(join(dir, 'worker.js'), code)
    const mf = new Miniflare(await bundledWorkerOptions({ bundle: join(dir, 'worker.js'), bindings: {} }))
    try {
      const answer = await mf.dispatchFetch(`http://worker.test/?edge=${encodeURIComponent(url)}`)
      expect(await answer.json()).toEqual({ list: { models: [{ name: 'm', href: '/v1/models/m' }] }, refused: true, name: 'ProblemError', status: 404, fieldPaths: ['model'] })
      expect(sends).toBe(3)
    } finally {
      await mf.dispose()
      await rm(dir, { recursive: true, force: true })
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
