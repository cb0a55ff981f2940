import type { Context, MiddlewareHandler } from 'hono'
import type { Bindings } from '../bindings.ts'

/** The context a stage sees: the bindings, the variables it reads (set by earlier stages) and those it sets. */
export interface StageEnv<Variables extends object> {
  Bindings: Bindings
  Variables: Variables
}

/** A handler once `Pipeline.then` has checked its place: what an app mounts. */
export type MountedHandler = MiddlewareHandler<StageEnv<object>>

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
export type Typed = { readonly [variables]?: { needs: object; sets: object } }
export type NeedsOf<S> = S extends { readonly [variables]?: { needs: infer N; sets: object } } ? N : never
export type SetsOf<S> = S extends { readonly [variables]?: { needs: object; sets: infer V } } ? V : never

/** Empty when `Have` holds every variable `Needs` names; otherwise one argument naming the missing ones. */
export type InOrder<Have, Needs> = Have extends Needs ? [] : [missing: Exclude<keyof Needs, keyof Have>]
