import type { Bindings } from '../../env.ts'
import type { Isolate } from '../../isolate.ts'
import type { Stage } from '../stage.ts'

export interface IsolateVariables {
  /** What lives for this isolate and its configuration: stores, caches, transports, settings. */
  isolate: Isolate
}

export interface IsolateStageOptions {
  /** The isolate for a request's bindings (`isolateCache`), shared with the worker's cron tick. */
  isolateFor: (env: Bindings | undefined) => Isolate
}

/** First of every request: puts the isolate's parts on the context for the stages after it. */
export const isolate = ({ isolateFor }: IsolateStageOptions): Stage<object, IsolateVariables> =>
  async function isolate(c, next) {
    c.set('isolate', isolateFor(c.env))
    await next()
  }
