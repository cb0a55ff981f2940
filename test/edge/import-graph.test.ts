import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const edge = join(root, 'edge')

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [path] : []
  })

/** Every relative import and re-export of a file, type-only ones included: a type import is still a dependency a reader follows. */
const importsOf = (file: string): string[] => {
  const text = readFileSync(file, 'utf8')
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gms), ...text.matchAll(/import\(\s*'(\.[^']+)'\s*\)/g)].map((m) => m[1])
  return specifiers.map((s) => resolve(dirname(file), s))
}

const files = sources(edge)
const graph = new Map(files.map((file) => [file, importsOf(file).filter((target) => target.startsWith(edge + '/'))]))
const name = (file: string) => relative(root, file)

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
const circles = (): string[][] => {
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (v: string): void => {
    index.set(v, counter)
    low.set(v, counter++)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = []
      let w: string
      do {
        w = stack.pop()!
        onStack.delete(w)
        component.push(w)
      } while (w !== v)
      if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.map(name).sort())
    }
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return found
}

/** The composition roots: what builds the app and the isolate, and the worker's entry. */
const roots = ['edge/app.ts', 'edge/isolate.ts', 'edge/worker.ts'].map((file) => join(root, file))

describe('the edge import graph', () => {
  it('reads every import form the edge uses, so the checks below see the real graph', () => {
    // A file the app is built from, which imports stages, stores and routes by relative paths.
    expect(graph.get(join(root, 'edge/app.ts'))?.length).toBeGreaterThan(10)
    expect(files.length).toBeGreaterThan(50)
  })

  it('has no import circle', () => {
    expect(circles()).toEqual([])
  })

  it('has no import from a stage, store, client or route back up to a composition root', () => {
    const upward = files
      .filter((file) => !roots.includes(file))
      .flatMap((file) => (graph.get(file) ?? []).filter((target) => roots.includes(target)).map((target) => `${name(file)} → ${name(target)}`))
    expect(upward).toEqual([])
  })
})
