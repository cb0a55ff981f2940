import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DockerfileParser } from 'dockerfile-ast'
import { describe, expect, it } from 'vitest'
import { PINNED_DOCKERFILES, parseBases } from '../../../tools/images/pins.ts'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const PINNED = /^[a-z0-9./-]+:[\w.-]+@sha256:[0-9a-f]{64}$/

/**
 * The one base left by tag: no digest of nvidia/cuda:12.9.1-cudnn-runtime-ubuntu22.04 could be
 * read from here (no Docker Hub) or found in a public pin of that exact tag (docs/deploy.md).
 * `npm run images:pin` pins it from a machine that reaches Docker Hub; then remove it from here.
 */
const TAG_ONLY = new Map([['infra/container/Dockerfile.gpu', new Set(['CUDA_IMAGE'])]])

const text = (file: string) => readFile(join(ROOT, file), 'utf8')

describe('the base images of the Dockerfiles', () => {
  it('are every Dockerfile under infra/', async () => {
    const found = (await readdir(join(ROOT, 'infra'), { recursive: true })).filter((f) => /(^|\/)Dockerfile[^/]*$/.test(f) && !f.endsWith('.dockerignore'))
    expect(found.map((f) => `infra/${f}`).sort()).toEqual([...PINNED_DOCKERFILES].sort())
  })

  it.each(PINNED_DOCKERFILES)('%s: every FROM names a leading ARG or an earlier stage, and each ARG is name:tag@sha256:<64 hex>', async (file) => {
    const source = await text(file)
    // dockerfile-ast, not the parser under test, says which FROMs there are and what they name.
    const dockerfile = DockerfileParser.parse(source)
    const initial = new Map(dockerfile.getInitialARGs().map((a) => [a.getProperty()!.getName(), a.getProperty()!.getValue()]))
    const stages = new Set<string>()
    const used = new Set<string>()
    for (const from of dockerfile.getFROMs()) {
      const image = from.getImage()!
      if (stages.has(image)) continue
      const name = /^\$\{(\w+)\}$/.exec(image)?.[1]
      expect(name, `${file}: FROM ${image} is not through an ARG`).toBeDefined()
      expect(initial.has(name!), `${file}: no leading ARG ${name}`).toBe(true)
      used.add(name!)
      if (from.getBuildStage()) stages.add(from.getBuildStage()!)
    }
    const exceptions = TAG_ONLY.get(file) ?? new Set()
    for (const name of used) {
      const value = initial.get(name)!
      if (exceptions.has(name)) expect(value, `${file} ${name}`).toMatch(/^[a-z0-9./-]+:[\w.-]+$/)
      else expect(value, `${file} ${name}`).toMatch(PINNED)
    }
    // The parser images:pin and test:images use reads the same bases.
    const { args, froms } = parseBases(source)
    expect(args.map((a) => [a.name, a.ref.raw])).toEqual([...used].map((n) => [n, initial.get(n)]))
    expect(froms.map((f) => f.arg?.name ?? f.image)).toEqual(dockerfile.getFROMs().map((f) => /^\$\{(\w+)\}$/.exec(f.getImage()!)?.[1] ?? f.getImage()))
  })

  it('name each base once: the same image under one ARG per Dockerfile, and the same pin across Dockerfiles', async () => {
    const byImage = new Map<string, Set<string>>()
    for (const file of PINNED_DOCKERFILES) {
      const refs = parseBases(await text(file)).args.map((a) => a.ref)
      expect(new Set(refs.map((r) => r.named)).size, file).toBe(refs.length)
      for (const r of refs) byImage.set(r.named, (byImage.get(r.named) ?? new Set()).add(r.raw))
    }
    for (const [named, raws] of byImage) expect([...raws], named).toHaveLength(1)
  })

  it('leaves only the named exception by tag', async () => {
    const tagOnly: string[] = []
    for (const file of PINNED_DOCKERFILES) {
      for (const a of parseBases(await text(file)).args) if (a.ref.digest === undefined) tagOnly.push(`${file} ${a.name}=${a.ref.raw}`)
    }
    expect(tagOnly).toEqual(['infra/container/Dockerfile.gpu CUDA_IMAGE=nvidia/cuda:12.9.1-cudnn-runtime-ubuntu22.04'])
  })
})
