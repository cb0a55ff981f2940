import type { KeyEntry } from './api-key.ts'
import type { KeyStore } from './key-store.ts'
import { MemoryKeyStore } from './memory.ts'

/**
 * The keys of the `API_KEYS` secret, then those of a store every isolate shares (Redis), when there
 * is one; with a shared store the secret may be left unset. Throws `KeyConfigError` for a secret
 * that cannot be used. `log` is where a refused shared entry is told (the Workers console by default).
 */
export const keyStoreFrom = (secret: string | undefined, shared?: KeyStore, log: (line: string) => void = console.error): KeyStore => {
  if (shared && (secret === undefined || secret.trim() === '')) return shared
  const fromSecret = MemoryKeyStore.fromSecret(secret)
  return shared ? new ChainedKeyStore(fromSecret, shared, log) : fromSecret
}

/**
 * Looks in the `API_KEYS` secret first, then in the shared store. A shared entry named like one of
 * the secret's is refused as unknown: the rate limit, the normalization counts and the logs go by
 * name, so the two keys would share a bucket and pass for each other. Told once per name.
 */
export class ChainedKeyStore implements KeyStore {
  readonly #told = new Set<string>()

  constructor(private readonly secret: MemoryKeyStore, private readonly shared: KeyStore, private readonly log: (line: string) => void) {}

  async find(hash: string): Promise<KeyEntry | undefined> {
    const own = await this.secret.find(hash)
    if (own) return own
    const issued = await this.shared.find(hash)
    if (issued === undefined || !this.secret.hasName(issued.name)) return issued
    if (!this.#told.has(issued.name)) {
      this.#told.add(issued.name)
      this.log(JSON.stringify({ level: 'error', msg: 'an API key in Redis is refused: an API_KEYS entry has its name, and keys are counted and rate-limited by name; issue it under another name', name: issued.name }))
    }
    return undefined
  }
}
