import { documentOf, type OpenApiDocument } from './openapi/document.ts'
import { edgeRoutes } from './routes/index.ts'

/**
 * The edge API's OpenAPI 3.1 document (`GET /openapi.json`), generated from the route
 * declarations in `routes/` and the zod schemas they name (`openapi/schemas.ts`).
 */
export { documentOf, type OpenApiDocument, type Operation } from './openapi/document.ts'
export { requestSchemas, responseSchemas } from './openapi/schemas.ts'

let built: OpenApiDocument | undefined

/** The document, built on first use and shared after. */
export const openApiDocument = (): OpenApiDocument => (built ??= documentOf(edgeRoutes()))
