import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../../shared/upstash-client.ts'
import { type KeyEntry, keyEntrySchema } from './api-key.ts'
import type { KeyStore } from './key-store.ts'
import { Problem } from '../../problem.ts'

/** The Redis hash holding key entries by their SHA-256 hex digest. */
export const API_KEYS_HASH = 'apikeys'

export interface UpstashKeyStoreOptions {
  /** How long an isolate trusts a found entry: a revoked key stops working everywhere within this. */
  ttlMs?: number
  /** How long "no such key" is trusted, so a stream of bad keys is not a stream of Redis reads. */
  missTtlMs?: number
  /** Most digests remembered per isolate. */
  maxEntries?: number
  /** Longest wait for Redis per lookup; slower is handled as a failure (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
  now?: () => number
}

/**
 * API keys in Redis (`HSET apikeys <sha256 hex> <entry JSON>`), written by `keys:create --redis`,
 * so keys are issued and revoked without redeploying the `API_KEYS` secret.
 *
 * The lookup is by digest, not a constant-time scan: the digest of a 256-bit random key reveals
 * nothing usable about the key, so how long a lookup takes cannot help a guesser. A stored entry
 * is validated like the secret's; a malformed one is treated as absent. When Redis fails or does
 * not answer within `timeoutMs`, an entry this isolate already knows is served stale; otherwise
 * the answer is 503 with Retry-After, not 401: the key may well be valid.
 */
export class UpstashKeyStore implements KeyStore {
  readonly #cache = new Map<string, { at: number; entry: KeyEntry | undefined }>()
  readonly #ttlMs: number
  readonly #missTtlMs: number
  readonly #maxEntries: number
  readonly #timeoutMs: number
  readonly #now: () => number

  constructor(private readonly redis: Redis, { ttlMs = 30_000, missTtlMs = 5_000, maxEntries = 10_000, timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS, now = Date.now }: UpstashKeyStoreOptions = {}) {
    this.#ttlMs = ttlMs
    this.#missTtlMs = missTtlMs
    this.#maxEntries = maxEntries
    this.#timeoutMs = timeoutMs
    this.#now = now
  }

  async find(hash: string): Promise<KeyEntry | undefined> {
    const hit = this.#cache.get(hash)
    const age = hit === undefined ? Infinity : this.#now() - hit.at
    if (hit !== undefined && age < (hit.entry ? this.#ttlMs : this.#missTtlMs)) return hit.entry
    let stored: unknown
    try {
      stored = await within(this.redis.hget(API_KEYS_HASH, hash), this.#timeoutMs)
    } catch {
      if (hit?.entry) return hit.entry
      throw new Problem(503, 'Service Unavailable', 'API keys cannot be checked right now; retry shortly', { slug: 'auth-unavailable', headers: { 'retry-after': '1' } })
    }
    const parsed = keyEntrySchema.safeParse(typeof stored === 'string' ? safeJson(stored) : stored)
    const entry = parsed.success && parsed.data.hash === hash ? parsed.data : undefined
    this.#cache.delete(hash)
    if (this.#cache.size >= this.#maxEntries) this.#cache.delete(this.#cache.keys().next().value!)
    this.#cache.set(hash, { at: this.#now(), entry })
    return entry
  }
}

const safeJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
