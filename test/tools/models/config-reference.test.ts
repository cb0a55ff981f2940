import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { modelConfig } from '../../../backend/repository/model-config.ts'

/** Every object key anywhere in a zod schema: through optional, default, array, union and pipe wrappers. */
const fieldNames = (schema: z.ZodType, into = new Set<string>()): Set<string> => {
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def
  const walk = (inner: unknown) => inner && fieldNames(inner as z.ZodType, into)
  if (def.type === 'object') {
    for (const [key, value] of Object.entries(def.shape as Record<string, z.ZodType>)) {
      into.add(key)
      walk(value)
    }
  }
  walk(def.innerType)
  walk(def.element)
  walk(def.in)
  walk(def.out)
  for (const option of (def.options as unknown[] | undefined) ?? []) walk(option)
  return into
}

describe('docs/bring-your-own-model.md config reference', () => {
  it('names every field of the config.json schema in its table', async () => {
    const page = await readFile(new URL('../../../docs/bring-your-own-model.md', import.meta.url), 'utf8')
    const table = page.slice(page.indexOf('## Config reference'))
    const named = new Set([...table.matchAll(/^\| `([^`]+)`(?:, `([^`]+)`)?/gm)].flatMap((m) => [m[1], m[2]]).filter(Boolean))
    const fields = fieldNames(modelConfig)
    expect(fields.size).toBeGreaterThan(30)
    expect([...fields].filter((f) => !named.has(f)).toSorted()).toEqual([])
  })
})
