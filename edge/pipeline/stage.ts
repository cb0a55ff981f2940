import type { Context, Hono, MiddlewareHandler } from 'hono'
import type { AppEnv, Bindings } from '../env.ts'
import { traced } from './trace/spans.ts'

/** The context a stage sees: the bindings, the variables it reads (set by earlier stages) and those it sets. */
export interface StageEnv<Variables extends object> {
  Bindings: Bindings
  Variables: Variables
}

declare const variables: unique symbol

/**
 * A pipeline stage: a Hono middleware typed by the context variables it needs from earlier stages
 * and those it sets for later ones. The phantom member lets `Pipeline.then` check the order.
 */
export type Stage<Needs extends object, Sets extends object = object> = MiddlewareHandler<StageEnv<Needs & Sets>> & {
  readonly [variables]?: { needs: Needs; sets: Sets }
}

/** The final handler of a pipeline: it reads what the stages set and answers. */
export type Responder<Needs extends object> = (c: Context<StageEnv<Needs>>) => Response | Promise<Response>

/** What `Pipeline.then` reads off a stage's type. */
type Typed = { readonly [variables]?: { needs: object; sets: object } }
type NeedsOf<S> = S extends { readonly [variables]?: { needs: infer N; sets: object } } ? N : never
type SetsOf<S> = S extends { readonly [variables]?: { needs: object; sets: infer V } } ? V : never

/** Empty when `Have` holds every variable `Needs` names; otherwise one argument naming the missing ones. */
type InOrder<Have, Needs> = Have extends Needs ? [] : [missing: Exclude<keyof Needs, keyof Have>]

/**
 * Stages in request order. A stage whose needs no earlier stage set is a type error at the
 * `then` that adds it, instead of an undefined variable at run time.
 */
export class Pipeline<Have extends object> {
  private constructor(private readonly handlers: ReadonlyArray<MiddlewareHandler<AppEnv>>) {}

  static begin(): Pipeline<object> {
    return new Pipeline([])
  }

  /** Adds a stage; with a span name, the stage runs in its own span `edge.<span>`. */
  then<S extends Typed>(stage: S, span?: string, ..._order: InOrder<Have, NeedsOf<S>>): Pipeline<Have & SetsOf<S>> {
    // The stage reads a subset of the app's variables: the order check above is what makes this sound.
    const handler = stage as unknown as MiddlewareHandler<AppEnv>
    return new Pipeline<Have & SetsOf<S>>([...this.handlers, span === undefined ? handler : traced(span, handler)])
  }

  /** How many handlers the pipeline holds: where a longer one built from it starts adding its own. */
  get size(): number {
    return this.handlers.length
  }

  /** The handlers added since `earlier` (a prefix of this pipeline mounted elsewhere, e.g. on every path). */
  since(earlier: { readonly size: number }): MiddlewareHandler<AppEnv>[] {
    return this.handlers.slice(earlier.size)
  }

  /** Every handler, for `app.use('*', ...)`. */
  all(): MiddlewareHandler<AppEnv>[] {
    return [...this.handlers]
  }

  /** The stages since `earlier` and the responder that ends the request. */
  answer<Needs extends object = Have>(earlier: { readonly size: number }, responder: Responder<Needs>, span?: string, ..._order: InOrder<Have, Needs>): MiddlewareHandler<AppEnv>[] {
    const last = responder as unknown as MiddlewareHandler<AppEnv>
    return [...this.since(earlier), span === undefined ? last : traced(span, last)]
  }
}

/**
 * Registers a route's handlers one by one, in order: Hono chains handlers of one method and path
 * as it chains a single call's, and its typed overloads take no spread of a list.
 */
export const mount = (app: Hono<AppEnv>, method: 'GET' | 'POST' | 'PUT', path: string, handlers: ReadonlyArray<MiddlewareHandler<AppEnv>>): void => {
  for (const handler of handlers) app.on(method, path, handler)
}
