/**
 * The edge API's OpenAPI 3.1 document (`GET /openapi.json`), generated from the zod schemas in
 * `openapi/schemas.ts`: the routes' own where they validate with one, else the shapes they answer.
 */
export { openApiDocument, type OpenApiDocument, type Operation } from './openapi/document.ts'
export { requestSchemas, responseSchemas } from './openapi/schemas.ts'
