import * as z from 'zod'
import { health } from '../openapi/schemas.ts'
import type { RequestIdVariables } from '../pipeline/request-id/index.ts'
import { answer, route } from './route.ts'

export interface MetaOptions {
  /** The OpenAPI document, serialized: it is generated from the route list this route is part of. */
  document: () => string
}

/** `GET /healthz` (the edge's liveness, no key, as on the backend) and `GET /openapi.json` (the API's description). */
export const metaRoutes = ({ document }: MetaOptions) => [
  route({
    method: 'get',
    path: '/healthz',
    guard: 'none',
    operationId: 'getHealth',
    summary: 'Edge liveness',
    description: 'Answers from the edge alone, with no key: for probes.',
    tag: 'meta',
    answers: { 200: { description: 'the edge is up', schema: health } },
    problems: [500],
    handle: answer<Pick<RequestIdVariables, 'requestId'>>(function getHealth(c) {
      return c.json({ ok: true, request_id: c.get('requestId') })
    }),
  }),
  route({
    method: 'get',
    path: '/openapi.json',
    guard: 'none',
    operationId: 'getOpenApiDocument',
    summary: 'This document',
    tag: 'meta',
    answers: { 200: { description: 'the OpenAPI 3.1 document of the edge API', schema: z.looseObject({}) } },
    problems: [500],
    handle: answer(function getOpenApiDocument(c) {
      return c.body(document(), 200, { 'content-type': 'application/json' })
    }),
  }),
] as const
