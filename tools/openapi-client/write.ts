import { writeFile } from 'node:fs/promises'
import { openApiDocument } from '../../edge/openapi.ts'
import { clientTypes } from './generate.ts'

/** `npm run openapi:client`: regenerates the committed client types from the document, beside the tests' typed client. */
export const CLIENT_TYPES = new URL('../../test/support/schema.d.ts', import.meta.url)

await writeFile(CLIENT_TYPES, await clientTypes(openApiDocument()))
console.log(`wrote ${CLIENT_TYPES.pathname}`)
