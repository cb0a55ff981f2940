import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'
import { describe, expect, it } from 'vitest'

/**
 * The client package's shape: what a browser, a Worker or React Native would load. Bundled by
 * esbuild for no platform in particular (a Node built-in would not resolve), minified and gzipped,
 * it stays under 10 KB; its own tsconfig checks it with the DOM's types and none of Node's.
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
