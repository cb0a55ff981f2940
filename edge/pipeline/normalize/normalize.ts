import type { Feature, FeatureSpec } from '../../../shared/feature-spec.ts'
import { quoteInput } from '../../../shared/quote-input.ts'
import { type FieldError, Problem } from '../../problem.ts'
import { formatPath, isRecord } from '../../format.ts'

/** What normalization may repair. Each kind counts once per value it changed. */
export type FixKind = 'bom' | 'whitespace' | 'percent-decoding' | 'nfc' | 'numeric-string'

export interface AppliedFix {
  path: string
  fix: FixKind
}

export interface NormalizeResult {
  /** The body with fixes applied (a copy where anything changed; the input is never mutated). */
  body: unknown
  /** How many fixes were applied (`X-Input-Normalized`). */
  fixes: number
  applied: AppliedFix[]
}

/** Most rounds of percent-decoding undone before a value is refused as suspicious. */
export const MAX_PERCENT_LAYERS = 4

const HEX_ESCAPE = /%[0-9A-Fa-f]{2}/
const BARE_PERCENT = /%(?![0-9A-Fa-f]{2})/
const ESCAPE_RUN = /(?:%[0-9A-Fa-f]{2})+/g
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/
// eslint-disable-next-line no-control-regex
const ASCII = /^[\u0000-\u007f]*$/
/**
 * Exact decimal numbers only: optional minus, no leading zeros, optional fraction. Not accepted:
 * hex (`0x10`), exponents (`1e3`), a plus sign, `.5`, `5.`, inner spaces, `NaN`, `Infinity`, `""`.
 */
const DECIMAL = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

class Ambiguous extends Error {}

/** Decodes every `%XX` run as UTF-8 bytes; throws `Ambiguous` on bytes that are not UTF-8. */
const percentDecodeOnce = (value: string): string =>
  value.replace(ESCAPE_RUN, (run) => {
    const bytes = new Uint8Array(run.length / 3)
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(run.slice(i * 3 + 1, i * 3 + 3), 16)
    try {
      return utf8.decode(bytes)
    } catch {
      throw new Ambiguous(`is percent-encoded, but ${quoteInput(run)} does not decode to UTF-8 text`)
    }
  })

/**
 * Undoes percent-encoding applied one or more times (`%252B` → `%2B` → `+`), or throws
 * `Ambiguous` where the value cannot be read one way only:
 * - a `%` that starts no `%XX` escape in the value as sent (a literal percent, or a broken escape?);
 * - `%XX` escapes beside a raw `+` (a space in form encoding, a plus otherwise);
 * - escapes that are not UTF-8;
 * - after a round, escapes beside a bare `%` (which layer is which?); more than `MAX_PERCENT_LAYERS` rounds.
 * A bare `%` that only appears after a round is a decoded literal percent and ends decoding.
 */
export const undoPercentEncoding = (value: string): string => {
  if (!value.includes('%')) return value
  if (BARE_PERCENT.test(value)) throw new Ambiguous('contains a "%" that starts no %XX escape, so it cannot be told whether the value is percent-encoded')
  if (value.includes('+')) throw new Ambiguous('mixes %XX escapes with a raw "+" (a space in form encoding, a plus otherwise)')
  let current = value
  for (let round = 1; HEX_ESCAPE.test(current); round++) {
    if (round > MAX_PERCENT_LAYERS) throw new Ambiguous(`is still percent-encoded after ${MAX_PERCENT_LAYERS} rounds of decoding`)
    if (round > 1 && BARE_PERCENT.test(current)) {
      throw new Ambiguous(`after ${round - 1} round${round > 2 ? 's' : ''} of percent-decoding still mixes %XX escapes with a bare "%"`)
    }
    current = percentDecodeOnce(current)
  }
  return current
}

interface Walk {
  applied: AppliedFix[]
  errors: FieldError[]
}

/** BOM and surrounding whitespace; returns the cleaned string and the fixes it took. */
const clean = (value: string): { value: string; fixes: FixKind[] } => {
  const fixes: FixKind[] = []
  let v = value
  if (v.charCodeAt(0) === 0xfeff) {
    while (v.charCodeAt(0) === 0xfeff) v = v.slice(1)
    fixes.push('bom')
  }
  const trimmed = v.trim()
  if (trimmed !== v) {
    fixes.push('whitespace')
    v = trimmed
  }
  return { value: v, fixes }
}

/**
 * A category value or entity id: percent-encoding first, so that a BOM or whitespace it hid is
 * removed like one sent as is; then NFC, on the text the value really is.
 */
const normalizeText = (value: string, path: readonly PropertyKey[], walk: Walk): string => {
  const fixes: FixKind[] = []
  let v: string
  try {
    const decoded = undoPercentEncoding(value)
    const cleaned = clean(decoded)
    if (decoded !== value) {
      // Encoded whitespace at the ends is trimmed; control characters left inside are not guessed at.
      if (CONTROL.test(cleaned.value)) throw new Ambiguous('percent-decodes to control characters')
      fixes.push('percent-decoding')
    }
    fixes.push(...cleaned.fixes)
    v = cleaned.value
  } catch (err) {
    if (!(err instanceof Ambiguous)) throw err
    walk.errors.push({ path: formatPath(path), message: err.message })
    return value
  }
  if (!ASCII.test(v)) {
    const nfc = v.normalize('NFC')
    if (nfc !== v) {
      fixes.push('nfc')
      v = nfc
    }
  }
  if (fixes.length > 0) {
    const at = formatPath(path)
    for (const fix of fixes) walk.applied.push({ path: at, fix })
  }
  return v
}

/** A numeric string becomes its number only when it is an exact decimal; otherwise it is left for validation to refuse. */
const normalizeNumber = (value: string, path: readonly PropertyKey[], walk: Walk): string | number => {
  const { value: cleaned, fixes } = clean(value)
  if (!DECIMAL.test(cleaned)) return value
  const n = Number(cleaned)
  if (!Number.isFinite(n)) return value // e.g. 400 digits: not a number JSON could carry either
  const at = formatPath(path)
  for (const fix of [...fixes, 'numeric-string' as const]) walk.applied.push({ path: at, fix })
  return n
}

const normalizeFeature = (f: Feature, value: unknown, path: readonly PropertyKey[], walk: Walk): unknown => {
  if (typeof value !== 'string') return value
  if (f.type === 'category') return normalizeText(value, path, walk)
  if (f.type === 'number' || f.type === 'integer') return normalizeNumber(value, path, walk)
  // Booleans are strict: "true"/"false" strings are not coerced; validation refuses them.
  return value
}

/** Copy-on-write over a record's entries: the same object back, nothing allocated, when nothing changed. */
const mapRecord = (record: Record<string, unknown>, fn: (key: string, value: unknown) => unknown): Record<string, unknown> => {
  const keys = Object.keys(record)
  let values: unknown[] | undefined
  for (let i = 0; i < keys.length; i++) {
    const value = record[keys[i]]
    const next = fn(keys[i], value)
    if (next !== value) (values ??= keys.map((key) => record[key]))[i] = next
  }
  // Object.fromEntries defines own properties, so a "__proto__" key stays a plain key.
  return values ? Object.fromEntries(keys.map((key, i) => [key, values[i]])) : record
}

/** A string that is itself a JSON object or array: the value was JSON-encoded twice. */
const isEncodedJson = (value: unknown, want: 'object' | 'array' | 'any'): boolean => {
  if (typeof value !== 'string') return false
  const text = value.trim().replace(/^\uFEFF+/, '')
  if (!text.startsWith('{') && !text.startsWith('[')) return false
  try {
    const parsed: unknown = JSON.parse(text)
    return want === 'array' ? Array.isArray(parsed) : want === 'object' ? isRecord(parsed) : typeof parsed === 'object' && parsed !== null
  } catch {
    return false
  }
}

interface Compiled {
  features: Map<string, Feature>
  entityKeys: Set<string>
}

const compiled = new WeakMap<FeatureSpec, Compiled>()
const compile = (spec: FeatureSpec): Compiled => {
  let c = compiled.get(spec)
  if (!c) {
    c = {
      features: new Map(spec.features.map((f) => [f.name, f])),
      entityKeys: new Set(spec.features.flatMap((f) => (f.source === 'request' ? [] : [f.source.key]))),
    }
    compiled.set(spec, c)
  }
  return c
}

const refuse = (detail: string, errors: FieldError[], slug: string): never => {
  throw new Problem(400, 'Bad Request', detail, { slug, errors })
}

/**
 * Repairs the client mistakes that can be repaired without guessing, and counts each repair:
 * a leading BOM and surrounding whitespace on strings, percent-encoding applied one or more times
 * to category values and entity ids (undone first, so what it hid is trimmed too), NFC
 * normalization, and numeric strings that are exact
 * decimals for number/integer features. Booleans are never coerced. Anything else is left as it
 * came for validation to judge; only ambiguous values are refused here (400, naming each field),
 * as is a body, `instances`, an instance or `entity` that is a JSON string of JSON (encoded twice).
 * Pure: the input is not mutated.
 */
export const normalizeBody = (body: unknown, spec: FeatureSpec): NormalizeResult => {
  if (isEncodedJson(body, 'any')) {
    refuse(
      'the request body is a JSON string that itself contains JSON: it was encoded twice (a client bug); send the object itself',
      [{ path: '', message: 'is a JSON-encoded string of JSON, not a JSON object' }],
      'double-encoded-body',
    )
  }
  if (!isRecord(body)) return { body, fixes: 0, applied: [] }
  const { features, entityKeys } = compile(spec)
  const walk: Walk = { applied: [], errors: [] }
  const twice: FieldError[] = []

  const out = mapRecord(body, (key, value) => {
    if (key === 'instances') {
      if (isEncodedJson(value, 'array')) twice.push({ path: 'instances', message: 'is a JSON-encoded string of an array; send the array itself' })
      if (!Array.isArray(value)) return value
      let changed = false
      const rows = value.map((row, i) => {
        if (isEncodedJson(row, 'object')) twice.push({ path: formatPath(['instances', i]), message: 'is a JSON-encoded string of an object; send the object itself' })
        if (!isRecord(row)) return row
        const next = mapRecord(row, (name, v) => {
          const f = features.get(name)
          return f ? normalizeFeature(f, v, ['instances', i, name], walk) : v
        })
        if (next !== row) changed = true
        return next
      })
      return changed ? rows : value
    }
    if (key === 'entity') {
      if (isEncodedJson(value, 'object')) twice.push({ path: 'entity', message: 'is a JSON-encoded string of an object; send the object itself' })
      if (!isRecord(value)) return value
      return mapRecord(value, (k, v) => (entityKeys.has(k) && typeof v === 'string' ? normalizeText(v, ['entity', k], walk) : v))
    }
    return value
  })

  if (twice.length > 0) refuse(`${twice.length} value${twice.length > 1 ? 's were' : ' was'} JSON-encoded twice (a client bug); send them as JSON, not as strings`, twice, 'double-encoded-body')
  if (walk.errors.length > 0) {
    refuse(
      `${walk.errors.length} value${walk.errors.length > 1 ? 's are' : ' is'} ambiguous and ${walk.errors.length > 1 ? 'were' : 'was'} not guessed at: ${walk.errors.map((e) => e.path).join(', ')}`,
      walk.errors,
      'ambiguous-input',
    )
  }
  return { body: out, fixes: walk.applied.length, applied: walk.applied }
}
