import type { Hono } from 'hono'
import type { InOrder, MountedHandler, NeedsOf, Responder, SetsOf, StageEnv, Typed } from './stage.ts'
import { traced } from './trace/spans.ts'

/**
 * Stages in request order. A stage whose needs no earlier stage set is a type error at the
 * `then` that adds it, instead of an undefined variable at run time.
 */
export class Pipeline<Have extends object> {
  private constructor(private readonly handlers: ReadonlyArray<MountedHandler>) {}

  static begin(): Pipeline<object> {
    return new Pipeline([])
  }

  /** Adds a stage; with a span name, the stage runs in its own span `edge.<span>`. */
  then<S extends Typed>(stage: S, span?: string, ..._order: InOrder<Have, NeedsOf<S>>): Pipeline<Have & SetsOf<S>> {
    // The stage reads a subset of the app's variables: the order check above is what makes this sound.
    const handler = stage as unknown as MountedHandler
    return new Pipeline<Have & SetsOf<S>>([...this.handlers, span === undefined ? handler : traced(span, handler)])
  }

  /** How many handlers the pipeline holds: where a longer one built from it starts adding its own. */
  get size(): number {
    return this.handlers.length
  }

  /** The handlers added since `earlier` (a prefix of this pipeline mounted elsewhere, e.g. on every path). */
  since(earlier: { readonly size: number }): MountedHandler[] {
    return this.handlers.slice(earlier.size)
  }

  /** Every handler, for `app.use('*', ...)`. */
  all(): MountedHandler[] {
    return [...this.handlers]
  }

  /** The stages since `earlier` and the responder that ends the request. */
  answer<Needs extends object = Have>(earlier: { readonly size: number }, responder: Responder<Needs>, span?: string, ..._order: InOrder<Have, Needs>): MountedHandler[] {
    const last = responder as unknown as MountedHandler
    return [...this.since(earlier), span === undefined ? last : traced(span, last)]
  }
}

/**
 * Registers a route's handlers one by one, in order: Hono chains handlers of one method and path
 * as it chains a single call's, and its typed overloads take no spread of a list.
 */
export const mount = <E extends StageEnv<object>>(app: Hono<E>, method: 'GET' | 'POST' | 'PUT', path: string, handlers: ReadonlyArray<MountedHandler>): void => {
  for (const handler of handlers) app.on(method, path, handler)
}
