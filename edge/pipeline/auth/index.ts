import type { Context } from 'hono'
import { type Scope, hashApiKey, isApiKey, rateLimitOf } from '../../stores/keys/api-key.ts'
import type { RateLimitBindingName } from '../../bindings.ts'
import { Problem } from '../../problem.ts'
import type { Stage } from '../stage.ts'
import type { KeyStore } from '../../stores/keys/key-store.ts'

/** An authenticated caller, as the auth middleware resolved it (never the key itself). */
export type Caller = {
  name: string
  /** The key's tenant (its name unless the entry names one): predictions and their labels belong to it. */
  tenant: string
  scopes: string[]
} & (
  /** Requests per minute this key may make, counted exactly. */
  | { rateLimitPerMinute: number; rateLimitBinding?: undefined }
  /** The `[[ratelimits]]` binding that limits this key instead (its limit and period are the binding's). */
  | { rateLimitBinding: RateLimitBindingName; rateLimitPerMinute?: undefined }
)

export interface AuthVariables {
  caller: Caller
}

export interface AuthOptions {
  /** The scope this route requires. */
  scope?: Scope
  /** Realm named in `WWW-Authenticate`. */
  realm?: string
}

const BEARER = /^Bearer[ ]+([^\s]+)[ ]*$/i

/**
 * Reads the key from `Authorization: Bearer <key>` or `X-Api-Key` (both may be sent only if they
 * agree); the key never reaches a problem detail, a log line or an error message.
 */
const presentedKey = (c: Context, unauthorized: (detail: string, error?: string) => Problem): string => {
  const authorization = c.req.header('authorization')
  const apiKey = c.req.header('x-api-key')
  let fromAuthorization: string | undefined
  if (authorization !== undefined) {
    const match = BEARER.exec(authorization)
    if (!match) throw unauthorized('the Authorization header must be "Bearer <key>"', 'invalid_request')
    fromAuthorization = match[1]
  }
  const fromApiKey = apiKey?.trim()
  if (fromAuthorization !== undefined && fromApiKey !== undefined && fromAuthorization !== fromApiKey) {
    throw unauthorized('Authorization and X-Api-Key carry different keys; send one', 'invalid_request')
  }
  const key = fromAuthorization ?? fromApiKey
  if (key === undefined || key === '') throw unauthorized('an API key is required: send "Authorization: Bearer <key>" or "X-Api-Key: <key>"')
  return key
}

const DIGEST_CACHE_SIZE = 1_024

/**
 * SHA-256 of recently presented keys. Hashing dominates the edge's own cost per request; a
 * caller sends the same key every time, so the isolate remembers a bounded number of digests.
 */
const digests = new Map<string, string>()
const digestOf = async (key: string): Promise<string> => {
  const known = digests.get(key)
  if (known !== undefined) return known
  const digest = await hashApiKey(key)
  if (digests.size >= DIGEST_CACHE_SIZE) digests.delete(digests.keys().next().value!)
  digests.set(key, digest)
  return digest
}

/**
 * Authenticates the caller by API key, looked up in the isolate's key store, and checks the
 * route's scope: 401 with `WWW-Authenticate` for a missing, malformed or unknown key, 403 for a
 * key without the scope. Sets `caller`.
 */
export const auth = ({ scope = 'predict', realm = 'edge-infer' }: AuthOptions = {}): Stage<{ isolate: { keys: KeyStore } }, AuthVariables> => {
  const challenge = `Bearer realm="${realm}"`
  const unauthorized = (detail: string, error?: string) =>
    new Problem(401, 'Unauthorized', detail, { headers: { 'www-authenticate': error ? `${challenge}, error="${error}"` : challenge } })
  return async function auth(c, next) {
    const key = presentedKey(c, unauthorized)
    if (!isApiKey(key)) throw unauthorized('the API key is malformed', 'invalid_token')
    const entry = await c.get('isolate').keys.find(await digestOf(key))
    if (entry === undefined) throw unauthorized('the API key is not recognized', 'invalid_token')
    if (!(entry.scopes as readonly string[]).includes(scope)) {
      throw new Problem(403, 'Forbidden', `the API key "${entry.name}" lacks the "${scope}" scope`, {
        headers: { 'www-authenticate': `${challenge}, error="insufficient_scope", scope="${scope}"` },
      })
    }
    const limit = rateLimitOf(entry)
    const identity = { name: entry.name, tenant: entry.tenant ?? entry.name, scopes: [...entry.scopes] }
    c.set('caller', limit.binding === undefined ? { ...identity, rateLimitPerMinute: limit.perMinute } : { ...identity, rateLimitBinding: limit.binding })
    await next()
  }
}
