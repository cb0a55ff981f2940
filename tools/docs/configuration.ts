import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { z } from 'zod'
import { settingsSchema } from '../../backend/settings.ts'
import { controllerBindings, secretBindings, servingBindings } from '../../edge/bindings.ts'

/**
 * docs/configuration.md's tables, written from the two settings schemas (backend/settings.ts and
 * edge/bindings.ts), so a default or a bound is changed in one place and the docs follow.
 * `npm run docs:config` rewrites the generated blocks; a test fails while they differ.
 */
export const CONFIGURATION_DOC = fileURLToPath(new URL('../../docs/configuration.md', import.meta.url))

interface Field {
  description?: string
  meta(): { default?: unknown } | undefined
  safeParse(value: unknown): { success: boolean; data?: unknown }
}

/** What a variable is when unset: the metadata's word for a computed default, else what parsing nothing gives. */
const defaultOf = (field: Field): string => {
  const declared = field.meta()?.default
  // A phrase ("a fresh UUID") is prose; a value is code.
  if (typeof declared === 'string') return /\s/.test(declared) ? declared : `\`${declared}\``
  const parsed = field.safeParse(undefined)
  const value = parsed.success ? parsed.data : undefined
  if (value === undefined) return 'unset'
  if (Array.isArray(value)) return value.length === 0 ? 'empty' : `\`${value.join(',')}\``
  if (value instanceof Set) return value.size === 0 ? 'none' : `\`${[...value].join(',')}\``
  return `\`${String(value)}\``
}

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** One markdown table: a row per variable, in the schema's order. */
export const table = (shape: Record<string, z.ZodType>, suffix = ''): string =>
  [
    '| variable | default | meaning |',
    '|---|---|---|',
    ...Object.entries(shape).map(([name, field]) => `| \`${name}\`${suffix} | ${defaultOf(field as unknown as Field)} | ${cell(field.description ?? '')} |`),
  ].join('\n')

/** Each generated block's name and content. */
export const generatedBlocks = (): Record<string, string> => ({
  backend: table(settingsSchema.shape),
  'edge-serving': table(servingBindings.shape),
  'edge-secrets': table(secretBindings.shape, ' (secret)'),
  'edge-controller': table(controllerBindings.shape),
})

/** `document` with every generated block replaced by what the schemas say now. */
export const renderConfiguration = (document: string): string => {
  let rendered = document
  for (const [name, content] of Object.entries(generatedBlocks())) {
    const begin = `<!-- generated:${name} (npm run docs:config) -->`
    const end = `<!-- end:${name} -->`
    const from = rendered.indexOf(begin)
    const to = rendered.indexOf(end)
    if (from < 0 || to < from) throw new Error(`docs/configuration.md has no block ${begin} … ${end}`)
    rendered = `${rendered.slice(0, from + begin.length)}\n${content}\n${rendered.slice(to)}`
  }
  return rendered
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CONFIGURATION_DOC, renderConfiguration(readFileSync(CONFIGURATION_DOC, 'utf8')))
  console.log(`wrote ${CONFIGURATION_DOC}`)
}
