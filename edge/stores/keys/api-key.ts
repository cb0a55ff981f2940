import * as z from 'zod'
import { RATE_LIMIT_BINDING_PREFIX, type RateLimitBindingName } from '../../bindings.ts'

/**
 * API keys: `ei_<environment>_<43 base64url characters>` (32 random bytes, 256 bits). The prefix
 * makes a leaked key recognizable to secret scanners and people; the edge stores and compares only
 * SHA-256 digests, never the key. Everything here runs unchanged in workerd and Node 20.
 */
export const API_KEY_PREFIX = 'ei_'

/** Random bytes per key (256 bits, well past the 128 required). */
export const API_KEY_BYTES = 32

const ENVIRONMENT = /^[a-z0-9]{1,16}$/
const API_KEY = /^ei_[a-z0-9]{1,16}_[A-Za-z0-9_-]{43}$/
const SHA256_HEX = /^[0-9a-f]{64}$/

export const SCOPES = ['predict', 'admin', 'feedback'] as const
export type Scope = (typeof SCOPES)[number]

/** Whether a string has the shape of a key this edge issues (says nothing about validity). */
export const isApiKey = (candidate: string): boolean => API_KEY.test(candidate)

const base64url = (bytes: Uint8Array): string => {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** A fresh key for `environment` (a short lowercase tag such as `live`, `test`, `local`). */
export const generateApiKey = (environment = 'live'): string => {
  if (!ENVIRONMENT.test(environment)) {
    throw new TypeError('the key environment tag must be 1-16 lowercase letters or digits')
  }
  return `${API_KEY_PREFIX}${environment}_${base64url(crypto.getRandomValues(new Uint8Array(API_KEY_BYTES)))}`
}

/** SHA-256 of the key's UTF-8 bytes, as raw bytes. */
export const digestApiKey = async (key: string): Promise<Uint8Array> =>
  new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(key)))

export const bytesToHex = (bytes: Uint8Array): string => {
  let hex = ''
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0')
  return hex
}

/** Lowercase hex digits by char code. */
const NIBBLE: ReadonlyArray<number | undefined> = Array.from({ length: 128 }, (_, code) => {
  const digit = '0123456789abcdef'.indexOf(String.fromCharCode(code))
  return digit === -1 ? undefined : digit
})

/** Bytes of a lowercase hex SHA-256 digest; undefined for anything else. */
export const digestFromHex = (hex: string): Uint8Array | undefined => {
  if (hex.length !== 64) return undefined
  const bytes = new Uint8Array(32)
  // Char codes, not parseInt of slices: every request with a key takes this path.
  for (let i = 0; i < 32; i++) {
    const high = NIBBLE[hex.charCodeAt(2 * i)]
    const low = NIBBLE[hex.charCodeAt(2 * i + 1)]
    if (high === undefined || low === undefined) return undefined
    bytes[i] = (high << 4) | low
  }
  return bytes
}

/** The SHA-256 hex digest stored in `API_KEYS` in place of the key. */
export const hashApiKey = async (key: string): Promise<string> => bytesToHex(await digestApiKey(key))

/**
 * Compares two byte arrays in time that depends only on their length, never on where they differ.
 * Lengths are not secret here (digests have a fixed size), so unequal lengths return at once.
 * `crypto.subtle.timingSafeEqual` exists only in workerd; this runs everywhere.
 */
export const timingSafeEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  if (a.byteLength !== b.byteLength) return false
  let diff = 0
  for (let i = 0; i < a.byteLength; i++) diff |= a[i] ^ b[i]
  return diff === 0
}

/** A key's name, and a tenant's. */
export const keyName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit')

/** The default `rate_limit`: the key's own `rate_limit_per_minute`, exact over a sliding minute (Redis when configured). */
export const EXACT_RATE_LIMIT = 'exact'

const RATE_LIMIT_BINDING = new RegExp(`^${RATE_LIMIT_BINDING_PREFIX}[A-Z0-9_]{1,58}$`)
const isBindingName = (value: string): value is RateLimitBindingName => RATE_LIMIT_BINDING.test(value)

/** One stored key: who it is, what it may do, how fast. The key itself is never stored. */
export const keyEntrySchema = z
  .strictObject({
    name: keyName,
    /** Whose predictions the key's requests are: keys of one tenant label each other's predictions. Default: the key's name. */
    tenant: keyName.optional(),
    hash: z.string().regex(SHA256_HEX, 'must be the 64-character lowercase SHA-256 hex digest printed by `npm run keys:create`, never the key itself'),
    scopes: z
      .array(z.enum(SCOPES))
      .min(1, 'must list at least one scope')
      .refine((scopes) => new Set(scopes).size === scopes.length, 'must not repeat a scope'),
    /** Which limiter serves the key: `exact` (default) or the name of a `[[ratelimits]]` binding. */
    rate_limit: z
      .string()
      .refine((mode) => mode === EXACT_RATE_LIMIT || isBindingName(mode), `must be "${EXACT_RATE_LIMIT}" or the name of a [[ratelimits]] binding in wrangler.toml, which starts with ${RATE_LIMIT_BINDING_PREFIX} (uppercase letters, digits, "_")`)
      .optional(),
    rate_limit_per_minute: z.number().int('must be a whole number').positive('must be at least 1').max(1_000_000, 'must be at most 1000000').optional(),
  })
  .superRefine((entry, ctx) => {
    const binding = entry.rate_limit !== undefined && entry.rate_limit !== EXACT_RATE_LIMIT
    // A binding's limit and period are its `simple` block in wrangler.toml; a per-key figure beside it would be silently ignored.
    if (binding && entry.rate_limit_per_minute !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['rate_limit_per_minute'], message: `cannot apply to a key limited by the ${entry.rate_limit} binding: its limit and period are that binding's simple = { limit, period } in wrangler.toml; drop rate_limit_per_minute, or set rate_limit to "${EXACT_RATE_LIMIT}"` })
    }
    if (!binding && entry.rate_limit_per_minute === undefined) {
      ctx.addIssue({ code: 'custom', path: ['rate_limit_per_minute'], message: `is required when rate_limit is "${EXACT_RATE_LIMIT}" (the default)` })
    }
  })
export type KeyEntry = z.infer<typeof keyEntrySchema>

/** How a key is limited: exactly, at its own requests per minute, or by a `[[ratelimits]]` binding. */
export type KeyRateLimit = { perMinute: number; binding?: undefined } | { binding: RateLimitBindingName; perMinute?: undefined }

/** The limit of a validated entry. */
export const rateLimitOf = (entry: KeyEntry): KeyRateLimit =>
  entry.rate_limit !== undefined && isBindingName(entry.rate_limit) ? { binding: entry.rate_limit } : { perMinute: entry.rate_limit_per_minute! }

/** The `API_KEYS` secret: a JSON array of entries with unique names and unique hashes. */
export const apiKeysSchema = z.array(keyEntrySchema).superRefine((entries, ctx) => {
  const names = new Set<string>()
  const hashes = new Set<string>()
  entries.forEach((entry, i) => {
    if (names.has(entry.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicates the name "${entry.name}" of an earlier entry` })
    if (hashes.has(entry.hash)) ctx.addIssue({ code: 'custom', path: [i, 'hash'], message: 'duplicates the hash of an earlier entry' })
    names.add(entry.name)
    hashes.add(entry.hash)
  })
})
