import * as z from 'zod'
import { rolloutSchema } from '../rollout/rollout.ts'
import type { Answer, RouteSpec } from '../routes/route.ts'
import { BODY_PROBLEMS, GUARD_PROBLEMS, HEADER_FIELDS, HEADERS, PARAMETERS, PROBLEM_HEADERS, PROBLEMS, type HeaderName, type Parameter, type ProblemStatus } from './components.ts'
import { requestSchemas, responseSchemas } from './schemas.ts'

/** The JSON the document is made of; every value is plain data, so it serialises as it is. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
type JsonObject = { [key: string]: Json }

export interface OpenApiDocument {
  openapi: '3.1.0'
  info: JsonObject
  servers: JsonObject[]
  tags: JsonObject[]
  security: JsonObject[]
  paths: Record<string, Record<string, Operation>>
  components: JsonObject
}

export interface Operation {
  operationId: string
  summary: string
  description?: string
  tags: string[]
  security: JsonObject[]
  parameters?: Json[]
  requestBody?: JsonObject
  responses: Record<string, JsonObject>
  [extension: `x-${string}`]: Json
}

const SCHEMA_URI = (id: string) => `#/components/schemas/${id}`

/** `step_started_at` defaults to the time of the PUT: its "default" would be the time the document was built. */
const stepStartedAt = rolloutSchema.shape.canary.unwrap().shape.step_started_at

/**
 * The components of one direction. Requests are described as clients send them (defaulted fields
 * optional), responses as the edge answers (defaulted fields always there).
 */
const componentsOf = (schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, JsonObject> => {
  const registry = z.registry<{ id: string }>()
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id })
  const { schemas: generated } = z.toJSONSchema(registry, {
    io,
    uri: SCHEMA_URI,
    // Nothing the document names is unrepresentable; should one appear, say so at build time.
    unrepresentable: 'throw',
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema === stepStartedAt) {
        delete jsonSchema.default
        jsonSchema.description = 'epoch ms when the current weight was set; a PUT without it starts the step now'
      }
    },
  })
  return Object.fromEntries(
    Object.entries(generated).map(([id, schema]) => {
      // A component is a schema inside the document, not a document of its own.
      const { $schema: _schema, $id: _id, ...rest } = schema as JsonObject
      return [id, rest]
    }),
  )
}

const TAGS: JsonObject[] = [
  { name: 'predict', description: 'Predictions from feature values, for models with a feature spec.' },
  { name: 'catalog', description: 'The models a client may call and how to call them.' },
  { name: 'rollout', description: 'Traffic split, canary, history and drift of a model (admin scope).' },
  { name: 'inference', description: 'Open Inference Protocol (KServe V2) pass-through to the backend.' },
  { name: 'feedback', description: 'Ground-truth labels for what the edge served (feedback scope).' },
  { name: 'admin', description: 'Operator endpoints (admin scope).' },
  { name: 'meta', description: 'The edge itself.' },
]

const INFO: JsonObject = {
  title: 'edge-infer',
  version: '0.1.0',
  summary: 'Prediction API for ONNX models at the edge.',
  description: 'A Hono worker at the edge (auth, rate limits, input normalization, validation, feature enrichment, rollout routing) in front of an onnxruntime-node inference tier with dynamic batching. Every failure is an RFC 9457 problem (`application/problem+json`); on /v2 paths it also carries the Open Inference Protocol `error` member.',
  // The repository's LICENSE: Apache-2.0, given by its SPDX id.
  license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
}

const SERVERS: JsonObject[] = [
  { url: 'https://edge-infer.example.workers.dev', description: 'production (placeholder: the workers.dev or custom domain of the deployment)' },
  { url: 'http://127.0.0.1:8787', description: 'local: `npm start`' },
]

let schemas: Record<string, JsonObject> | undefined
/** The body schemas' components, generated on first use (not at the worker's start). */
const schemaComponents = () => (schemas ??= { ...componentsOf(requestSchemas, 'input'), ...componentsOf(responseSchemas, 'output') })

const ref = (name: string): JsonObject => ({ $ref: SCHEMA_URI(name) })

/** A schema inside the document, not a document of its own (no `$schema`). */
const inlineSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonObject => {
  const { $schema: _schema, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'throw' }) as JsonObject
  return rest
}

/** A schema named as a component is referred to; any other is written in place. */
const schemaOf = (schema: z.ZodType, components: ReadonlyMap<z.ZodType, string>, io: 'input' | 'output'): JsonObject => {
  const name = components.get(schema)
  return name === undefined ? inlineSchema(schema, io) : ref(name)
}

const requestComponents = new Map<z.ZodType, string>(Object.entries(requestSchemas).map(([name, schema]) => [schema, name]))
const responseComponents = new Map<z.ZodType, string>(Object.entries(responseSchemas).map(([name, schema]) => [schema, name]))

/** Every response carries X-Request-Id; the rest as named. */
const headerRefs = (names: readonly HeaderName[]): JsonObject =>
  Object.fromEntries((['XRequestId', ...names] as HeaderName[]).map((name) => [HEADER_FIELDS[name], { $ref: `#/components/headers/${name}` }]))

/** A parameter component: its value's schema as clients send it, bounds a JavaScript number always has left out. */
const parameterOf = ({ schema, ...parameter }: Parameter): JsonObject => {
  const json = inlineSchema(schema, 'input')
  if (json.maximum === Number.MAX_SAFE_INTEGER) delete json.maximum
  return { ...parameter, schema: json }
}

const SECURITY: JsonObject[] = [{ bearer: [] }, { apiKey: [] }]

/** The OpenAPI form of a Hono path: `/v1/models/:model` → `/v1/models/{model}`. */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_]+)/g, '{$1}')

/** The problems a route may answer: its guard's, its body check's and its own, except where it declares an answer. */
export const problemStatuses = (route: RouteSpec): ProblemStatus[] =>
  [...new Set([...(route.guard === 'none' ? [] : GUARD_PROBLEMS), ...(route.body ? BODY_PROBLEMS : []), ...(route.problems ?? [])])]
    .filter((s) => !(s in route.answers))
    .sort((a, b) => a - b)

/** The document of a route list. */
export const documentOf = (routes: ReadonlyArray<RouteSpec>): OpenApiDocument => {
  /** Problem responses are components, one per status and flavour (with `error` on /v2): only those some operation names. */
  const responses: Record<string, JsonObject> = {}
  const problemResponse = (status: ProblemStatus, oip: boolean): JsonObject => {
    const name = `${oip ? 'OipProblem' : 'Problem'}${status}`
    responses[name] ??= {
      description: PROBLEMS[status],
      headers: headerRefs(PROBLEM_HEADERS[status] ?? []),
      content: { 'application/problem+json': { schema: ref(oip ? 'OipProblem' : 'Problem') } },
    }
    return { $ref: `#/components/responses/${name}` }
  }
  const answerOf = ({ description, schema, headers = [], type = 'application/json', orProblem = false }: Answer, oip: boolean): JsonObject => ({
    description,
    headers: headerRefs(headers),
    content: {
      [type]: { schema: schemaOf(schema, responseComponents, 'output') },
      ...(orProblem ? { 'application/problem+json': { schema: ref(oip ? 'OipProblem' : 'Problem') } } : {}),
    },
  })
  const operation = (route: RouteSpec): Operation => {
    const oip = route.path.startsWith('/v2/')
    const keyed = route.guard !== 'none'
    return {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: keyed ? SECURITY : [],
      ...(keyed ? { 'x-scope': route.guard } : {}),
      ...(route.parameters?.length ? { parameters: route.parameters.map((name) => ({ $ref: `#/components/parameters/${name}` })) } : {}),
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: schemaOf(route.body, requestComponents, 'input') } } } } : {}),
      responses: {
        ...Object.fromEntries(Object.entries(route.answers).map(([status, answer]) => [status, answerOf(answer, oip)])),
        ...Object.fromEntries(problemStatuses(route).map((s) => [String(s), problemResponse(s, oip)])),
      },
    }
  }
  const paths: Record<string, Record<string, Operation>> = {}
  for (const route of routes) (paths[openApiPath(route.path)] ??= {})[route.method] = operation(route)
  return {
    openapi: '3.1.0',
    info: INFO,
    servers: SERVERS,
    tags: TAGS,
    security: SECURITY,
    paths,
    components: {
      schemas: schemaComponents(),
      responses,
      parameters: Object.fromEntries(Object.entries(PARAMETERS).map(([name, parameter]) => [name, parameterOf(parameter)])),
      headers: HEADERS as unknown as JsonObject,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API key> (npm run keys:create)' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'the same API key in X-Api-Key' },
      },
    },
  }
}

