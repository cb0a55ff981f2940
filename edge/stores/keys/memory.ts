import { type KeyEntry, apiKeysSchema, digestFromHex, timingSafeEqual } from './api-key.ts'
import { KeyConfigError, type KeyStore, formatPath, parseApiKeys } from './key-store.ts'

/**
 * Keys held in memory, typically parsed from the `API_KEYS` secret. `find` compares the digest
 * against every entry in constant time and never stops early, so timing does not tell how close a
 * guess came or where its entry sits.
 */
export class MemoryKeyStore implements KeyStore {
  readonly #entries: ReadonlyArray<{ entry: KeyEntry; digest: Uint8Array }>

  /** Throws `KeyConfigError` for invalid entries (bad fields, duplicate names or hashes). */
  constructor(entries: readonly KeyEntry[]) {
    const parsed = apiKeysSchema.safeParse(entries)
    if (!parsed.success) {
      throw new KeyConfigError(`key entries are invalid: ${parsed.error.issues.map((issue) => `${formatPath('entries', issue.path)}: ${issue.message}`).join('; ')}`)
    }
    this.#entries = parsed.data.map((entry) => ({ entry, digest: digestFromHex(entry.hash)! }))
  }

  /** A store from the `API_KEYS` JSON; throws `KeyConfigError` with a readable reason. */
  static fromSecret(json: string | undefined, source = 'API_KEYS'): MemoryKeyStore {
    return new MemoryKeyStore(parseApiKeys(json, source))
  }

  get size(): number {
    return this.#entries.length
  }

  /** Whether an entry has this name (names are no secret: they show in 403s, logs and metrics). */
  hasName(name: string): boolean {
    return this.#entries.some(({ entry }) => entry.name === name)
  }

  async find(hash: string): Promise<KeyEntry | undefined> {
    const digest = digestFromHex(hash)
    if (digest === undefined) return undefined
    let found: KeyEntry | undefined
    for (const { entry, digest: stored } of this.#entries) {
      const match = timingSafeEqual(digest, stored)
      found = match ? entry : found
    }
    return found
  }
}
