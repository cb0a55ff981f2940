import { writeFile } from 'node:fs/promises'
import { openApiDocument } from '../../edge/openapi.ts'
import { CLIENT_TYPES, clientTypes } from './generate.ts'

/** `npm run openapi:client`: regenerates the committed client types from the document, in the client package. */
await writeFile(CLIENT_TYPES, await clientTypes(openApiDocument()))
console.log(`wrote ${CLIENT_TYPES.pathname}`)
