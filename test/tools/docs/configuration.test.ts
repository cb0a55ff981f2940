import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { settingsSchema } from '../../../backend/settings.ts'
import { controllerBindings, secretBindings, servingBindings } from '../../../edge/bindings.ts'
import { CONFIGURATION_DOC, renderConfiguration, table } from '../../../tools/docs/configuration.ts'

describe('docs/configuration.md', () => {
  it('holds the tables the two settings schemas give (run `npm run docs:config` after changing one)', () => {
    const document = readFileSync(CONFIGURATION_DOC, 'utf8')
    expect(document).toBe(renderConfiguration(document))
  })

  it('names every variable of both schemas, each with a meaning', () => {
    const document = readFileSync(CONFIGURATION_DOC, 'utf8')
    const shapes = [settingsSchema.shape, servingBindings.shape, secretBindings.shape, controllerBindings.shape]
    for (const shape of shapes) {
      for (const [name, field] of Object.entries(shape)) {
        expect(document, name).toContain(`| \`${name}\``)
        expect(field.description, name).toBeTruthy()
      }
    }
  })

  it('renders what parsing nothing gives as the default, and a declared word where the default is computed', () => {
    const shape = {
      SIZE: z.coerce.number().default(7).describe('a size'),
      NAME: z.string().optional().describe('a | name'),
      ID: z.string().default(() => 'x').describe('an id').meta({ default: 'a fresh id' }),
      LIST: z.string().optional().transform((raw) => (raw ?? '').split(',').filter(Boolean)).describe('a list'),
    }
    expect(table(shape).split('\n').slice(2)).toEqual(['| `SIZE` | `7` | a size |', '| `NAME` | unset | a \\| name |', '| `ID` | a fresh id | an id |', '| `LIST` | empty | a list |'])
  })

  it('refuses a document that lost a generated block', () => {
    expect(() => renderConfiguration('# Configuration\n')).toThrow(/no block <!-- generated:backend/)
  })
})
