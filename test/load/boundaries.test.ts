import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * load/ measures what infra/ deploys, and infra/ holds deploy artifacts only: neither imports the
 * other, so changing one never drags the other along. Inside load/, each command's folder uses
 * load/harness/ and load/scenarios/, never another command's parts, so a shared part is found in
 * one place.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SHARED_ROOMS = ['load/harness', 'load/scenarios']

const sourcesUnder = async (dir: string): Promise<string[]> =>
  (await readdir(join(ROOT, dir), { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile() && /\.[cm]?[jt]s$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((file) => !file.split(sep).some((part) => part === 'node_modules' || part === 'cdk.out'))

/** The repository paths a file's relative imports, re-exports and import() calls reach. */
const importedBy = async (file: string): Promise<string[]> => {
  const text = await readFile(join(ROOT, file), 'utf8')
  return [...text.matchAll(/(?:\bfrom|\bimport\s*\(?)\s*(['"])(\.[^'"\n]*)\1/g)].map((m) => relative(ROOT, resolve(ROOT, dirname(file), m[2])))
}

const topFolder = (path: string): string => path.split(sep)[0]

/** The folder a file of load/ belongs to: load/bench/<name> for a bench, load/<folder> otherwise. */
const roomOf = (file: string): string => {
  const [, first, second] = file.split(sep)
  return first === 'bench' ? `load/bench/${second}` : `load/${first}`
}

const graph = async (dirs: readonly string[]): Promise<Map<string, string[]>> => {
  const files = (await Promise.all(dirs.map(sourcesUnder))).flat()
  return new Map(await Promise.all(files.map(async (f) => [f, await importedBy(f)] as const)))
}

describe('load/ boundaries', () => {
  it('finds no import from load/ into infra/ or from infra/ into load/', async () => {
    const imports = await graph(['load', 'infra'])
    // The scan sees real imports, so an empty result below means something.
    expect(imports.get(join('load', 'run', 'main.ts'))).toContain(join('load', 'harness', 'stack.ts'))
    const crossing = [...imports].flatMap(([file, targets]) =>
      targets.filter((t) => topFolder(t) !== topFolder(file) && ['load', 'infra'].includes(topFolder(t))).map((t) => `${file} imports ${t}`),
    )
    expect(crossing).toEqual([])
  })

  it("keeps each command's parts to its own folder: others import only load/harness/ and load/scenarios/", async () => {
    const imports = await graph(['load'])
    const crossing = [...imports].flatMap(([file, targets]) =>
      targets
        .filter((t) => topFolder(t) === 'load' && roomOf(t) !== roomOf(file) && !SHARED_ROOMS.includes(roomOf(t)))
        .map((t) => `${file} imports ${t}`),
    )
    expect(crossing).toEqual([])
  })

  it('has no loose files at the root of load/, and every npm script into load/ runs a main.ts', async () => {
    const loose = (await readdir(join(ROOT, 'load'), { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name)
    expect(loose).toEqual([])
    const { scripts } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    const entries = Object.values(scripts).flatMap((s) => [...s.matchAll(/\btsx (load\/\S+)/g)].map((m) => m[1]))
    expect(entries).toContain('load/run/main.ts')
    expect(entries.filter((e) => !e.endsWith('/main.ts'))).toEqual([])
  })
})
