import type { z } from 'zod'
import type { HeaderName, ParameterName, ProblemStatus } from '../openapi/components.ts'
import type { Pipeline } from '../pipeline/pipeline.ts'
import type { MountedHandler, Responder } from '../pipeline/stage.ts'

/** Whose key a route needs: none (probes, the console page), or an API key with this scope. */
export type Guard = 'none' | 'predict' | 'admin' | 'feedback'

/** An answer a route gives with a status: what it means and the shape of its body. */
export interface Answer {
  description: string
  /** The body's schema; the OpenAPI test parses the route's real answers with it. */
  schema: z.ZodType
  /** Headers besides X-Request-Id, which every response carries. */
  headers?: readonly HeaderName[]
  /** The media type when not application/json. */
  type?: string
  /** The answer may also be a problem (readiness: the backend could not be asked). */
  orProblem?: boolean
}

/** Handlers as a pipeline hands them to the app. */
export type Handlers = MountedHandler[]

/**
 * What a route runs after its guard (and body check): its own stages, if any, then its responder.
 * `guarded` is the pipeline so far: a route's stages are added with `then`, order-checked from there.
 */
export type Handle<Needs extends object> = (guarded: Pipeline<Needs>) => Handlers

/** What the OpenAPI document reads of a route (edge/openapi/document.ts). */
export interface RouteSpec {
  method: 'get' | 'post' | 'put'
  /** Hono's form: `/v1/models/:model`. */
  path: string
  guard: Guard
  /** The JSON body it reads: the body checks (`requireJson`) run after the guard only on a route with one. */
  body?: z.ZodType
  operationId: string
  summary: string
  description?: string
  tag: string
  parameters?: readonly ParameterName[]
  /** The non-problem answers, by status. */
  answers: Readonly<Record<number, Answer>>
  /** Problems the route itself may answer; the guard's and the body check's are added. */
  problems?: readonly ProblemStatus[]
}

/**
 * One route, declared once: the app mounts it behind its guard (edge/app.ts) and the OpenAPI
 * document describes it from this. `Needs` is what its handlers read off the context; the app
 * checks at compile time that the route's guard provides it.
 */
export interface Route<Needs extends object = object> extends RouteSpec {
  handle: Handle<Needs>
  /** Phantom: carries `Needs` to the app's compile-time check. */
  readonly needs?: Needs
}

/** Declares a route, keeping in its type what its handlers need, its guard and whether it reads a body: what the app's check reads. */
export const route = <Needs extends object, G extends Guard, B extends z.ZodType = never>(declared: Route<Needs> & { guard: G; body?: B }): Route<Needs> & { guard: G; body?: B } => declared

/** A route whose whole handling is one responder (no stages of its own). */
export const answer = <Needs extends object>(responder: Responder<Needs>, span?: string): Handle<Needs> =>
  // `Needs` is the pipeline's own variables: in order by construction (the check cannot see that for a type parameter).
  (guarded) => (guarded as Pipeline<object>).answer(guarded, responder as unknown as Responder<object>, span)
