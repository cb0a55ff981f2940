import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { CLI_DOC, cliReference } from '../../../tools/cli/docs.ts'

describe('docs/cli.md', () => {
  it('is the command tree\'s help as the commands print it (npm run docs:cli rewrites it)', async () => {
    expect(await readFile(CLI_DOC, 'utf8')).toBe(await cliReference())
  })
})
