import { type KeyEntry, apiKeysSchema } from './api-key.ts'

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

export const formatPath = (source: string, path: readonly PropertyKey[]): string =>
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
