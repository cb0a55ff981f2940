import type { Context } from 'hono'
import type { RouterRoute } from 'hono/types'
import type { StageEnv } from '../pipeline/stage.ts'
import { Problem } from '../problem.ts'
import { quoteInput } from '../../shared/quote-input.ts'

/**
 * Each path of a route table with the methods it answers, in alphabetical order (not the order
 * they were added: a body check mounted ahead of a route's handler adds its method first); HEAD
 * with GET, since Hono answers it from the GET route.
 */
export const allowedMethods = (routes: readonly RouterRoute[]): Map<string, string[]> => {
  const byPath = new Map<string, Set<string>>()
  for (const { path, method } of routes) {
    // ALL is middleware (auth, limits on a subtree), not an operation.
    if (method === 'ALL') continue
    const methods = byPath.get(path) ?? new Set<string>()
    methods.add(method)
    if (method === 'GET') methods.add('HEAD')
    byPath.set(path, methods)
  }
  return new Map([...byPath].map(([path, methods]) => [path, [...methods].sort()]))
}

export interface MethodNotAllowedOptions {
  /** The methods the path has, for `Allow`. */
  allow: readonly string[]
}

/** 405 with `Allow` (RFC 9110 §15.5.6) for a path that exists under other methods: a 404 would say it does not. */
export const methodNotAllowed = ({ allow }: MethodNotAllowedOptions) =>
  function methodNotAllowed(c: Context<StageEnv<object>>): never {
    const methods = allow.join(', ')
    throw new Problem(405, 'Method Not Allowed', `${quoteInput(c.req.method)} is not allowed on ${c.req.path} (allowed: ${methods})`, { headers: { allow: methods } })
  }
