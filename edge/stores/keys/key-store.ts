import { type KeyEntry, apiKeysSchema, digestFromHex, timingSafeEqual } from '../../pipeline/auth/api-key.ts'

/** Where the edge looks up API keys by their SHA-256 hex digest. */
export interface KeyStore {
  find(hash: string): Promise<KeyEntry | undefined>
}

/** `API_KEYS` (or another key source) cannot be used; raised once, at startup or first use. */
export class KeyConfigError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'KeyConfigError'
  }
}

const formatPath = (source: string, path: readonly PropertyKey[]): string =>
  path.reduce<string>((at, part) => (typeof part === 'number' ? `${at}[${part}]` : `${at}.${String(part)}`), source)

/**
 * Parses and validates the `API_KEYS` JSON. Errors name the entry and field but never echo the
 * secret's text (a JSON syntax error message would quote it, and it might hold a pasted key).
 */
export const parseApiKeys = (json: string | undefined, source = 'API_KEYS'): KeyEntry[] => {
  if (json === undefined || json.trim() === '') {
    throw new KeyConfigError(`${source} is not set: create a key with \`npm run keys:create -- --name <name> --scopes predict\` and store the printed entry in a JSON array (use [] for no keys)`)
  }
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    throw new KeyConfigError(`${source} is not valid JSON: expected an array of {"name", "hash", "scopes", "rate_limit_per_minute"} entries`)
  }
  const parsed = apiKeysSchema.safeParse(value)
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${formatPath(source, issue.path)}: ${issue.message}`)
    throw new KeyConfigError(`${source} is invalid: ${problems.join('; ')}`)
  }
  return parsed.data
}

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
