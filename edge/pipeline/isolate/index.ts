import type { Bindings } from '../../bindings.ts'
import type { Stage } from '../stage.ts'

export interface IsolateVariables<Parts extends object> {
  /** What lives for this isolate and its configuration: stores, caches, transports, settings. */
  isolate: Parts
}

export interface IsolateStageOptions<Parts extends object> {
  /** The isolate for a request's bindings (`isolateCache`), shared with the worker's cron tick. */
  isolateFor: (env: Bindings | undefined) => Parts
}

/**
 * First of every request: puts the isolate's parts on the context for the stages after it. Each
 * stage names the parts it reads by their own types; the composition root's isolate has them all.
 */
export const isolate = <Parts extends object>({ isolateFor }: IsolateStageOptions<Parts>): Stage<object, IsolateVariables<Parts>> =>
  async function isolate(c, next) {
    c.set('isolate', isolateFor(c.env))
    await next()
  }
