import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

/**
 * tools/ holds offline builders (the demo models, their baselines). What serves traffic must run
 * without them, so nothing under the serving folders may import from tools/.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SERVING = ['backend', 'edge', 'shared']
const SOURCE = /\.[cm]?[jt]sx?$/

/** Specifiers of static imports, re-exports, side-effect imports and dynamic import() calls. */
const specifiers = (source: string): string[] =>
  [...source.matchAll(/(?:\bfrom|\bimport\s*\(?)\s*(['"])([^'"\n]+)\1/g)].map((m) => m[2])

const sourceFiles = async (dir: string): Promise<string[]> => {
  const entries = await readdir(join(ROOT, dir), { recursive: true, withFileTypes: true })
  return entries.filter((e) => e.isFile() && SOURCE.test(e.name)).map((e) => relative(ROOT, join(e.parentPath, e.name)))
}

/** Whether `specifier`, imported by the repository file `file`, points into tools/. */
const reachesTools = (file: string, specifier: string): boolean => {
  if (!specifier.startsWith('.')) return false
  const target = relative(ROOT, resolve(ROOT, dirname(file), specifier))
  return target === 'tools' || target.startsWith(`tools${sep}`)
}

describe('the serving code and tools/', () => {
  it('reads every kind of import specifier', () => {
    const source = [
      "import { a } from '../x.ts'",
      "import type { B } from \"./y.ts\"",
      "import './side-effect.ts'",
      "export * from '../../z.ts'",
      'const lazy = await import( "./lazy.ts" )',
      "import {\n  c,\n  d,\n} from '@scope/pkg'",
    ].join('\n')
    expect(specifiers(source)).toEqual(['../x.ts', './y.ts', './side-effect.ts', '../../z.ts', './lazy.ts', '@scope/pkg'])
  })

  it('tells a path into tools/ from one that only looks like it', () => {
    expect(reachesTools('backend/monitor/drift/report.ts', '../../../tools/training/baseline.ts')).toBe(true)
    expect(reachesTools('edge/app.ts', '../tools/x.ts')).toBe(true)
    expect(reachesTools('backend/app.ts', './tools/x.ts')).toBe(false)
    expect(reachesTools('backend/app.ts', '../toolsets/x.ts')).toBe(false)
    expect(reachesTools('backend/app.ts', 'tools')).toBe(false)
  })

  it('finds no import from tools/ under backend/, edge/ or shared/', async () => {
    const files = (await Promise.all(SERVING.map(sourceFiles))).flat()
    const imports = new Map(await Promise.all(files.map(async (f) => [f, specifiers(await readFile(join(ROOT, f), 'utf8'))] as const)))
    // The scan sees real imports, so an empty result below means something.
    expect(imports.get(join('backend', 'lambda.ts'))).toContain('./infer/serve.ts')
    const offending = [...imports].flatMap(([file, list]) => list.filter((s) => reachesTools(file, s)).map((s) => `${file} imports ${s}`))
    expect(offending).toEqual([])
  })
})
