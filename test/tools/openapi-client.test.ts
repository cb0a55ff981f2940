import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { openApiDocument } from '../../edge/openapi.ts'
import { CLIENT_TYPES, clientTypes } from '../../tools/openapi-client/generate.ts'

describe('the committed client types (clients/typescript/src/schema.ts)', () => {
  it('are what openapi-typescript generates from the document now: run `npm run openapi:client` after changing it', async () => {
    const committed = await readFile(CLIENT_TYPES, 'utf8')
    expect(committed).toBe(await clientTypes(openApiDocument()))
  })
})
