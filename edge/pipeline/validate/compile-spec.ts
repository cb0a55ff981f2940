import * as z from 'zod'
import type { Feature, FeatureSpec, FeatureValue } from '../../../shared/feature-spec.ts'
import type { FieldError } from '../../problem.ts'
import { CONTROL, MAX_STRING_LENGTH, compileAcceptor } from './acceptor.ts'
import { describeValue, formatPath, isRecord } from '../../format.ts'

/** A predict request after normalization and validation against the model's feature spec. */
export interface PredictInput {
  instances: Array<Record<string, FeatureValue>>
  /** Entity ids for feature enrichment, e.g. `{ user_id: "u-42" }`. */
  entity?: Record<string, string>
}

export interface CompileOptions {
  /** Most instances one request may carry (default 64). */
  maxInstances?: number
}

export type ValidationResult = { success: true; data: PredictInput } | { success: false; errors: FieldError[] }

/** A predict-body validator compiled from one feature spec: the zod schema plus the checks across fields. */
export interface PredictValidator {
  /** The zod schema of the body's shape (types, ranges, unknown keys, instance count). */
  readonly schema: z.ZodType
  readonly maxInstances: number
  /** Validates a (normalized) body; on success the data carries no defaults (enrichment fills those). */
  validate(body: unknown): ValidationResult
}

type Issue = { code: string; input?: unknown }
const required = (iss: Issue, otherwise: string): string => (iss.input === undefined ? 'is required' : `${otherwise}, got ${describeValue(iss.input)}`)

/** One feature's value schema, with messages that say what was expected and what came. */
const featureValue = (f: Feature): z.ZodType => {
  switch (f.type) {
    case 'number':
    case 'integer': {
      const { min, max } = f
      const expected = `must be ${f.type === 'integer' ? 'an integer' : 'a number'} between ${min} and ${max}`
      const ok = f.type === 'integer' ? (v: number) => Number.isSafeInteger(v) && v >= min && v <= max : (v: number) => Number.isFinite(v) && v >= min && v <= max
      // z.number() already refuses NaN and ±Infinity; the refinement says so in the same words.
      return z.number({ error: (iss) => required(iss, expected) }).refine(ok, { error: (iss) => required(iss, expected) })
    }
    case 'boolean':
      // Strict: the strings "true"/"false" are refused, never coerced.
      return z.boolean({ error: (iss) => required(iss, 'must be a JSON boolean (true or false)') })
    case 'category': {
      // Any non-empty string is accepted: a value outside `categories` is not an error, it is
      // encoded into the `__unseen__` column downstream (and counted by drift monitoring).
      const expected = `must be a non-empty string (known: ${f.categories.join(', ')}; any other value counts as unseen)`
      return z.string({ error: (iss) => required(iss, expected) }).refine((s) => s.length > 0 && s.length <= MAX_STRING_LENGTH, {
        error: (iss) =>
          typeof iss.input === 'string' && iss.input.length > MAX_STRING_LENGTH
            ? `must be at most ${MAX_STRING_LENGTH} characters, got ${iss.input.length}`
            : `${expected}, got ${describeValue(iss.input)}`,
      })
    }
  }
}

/** The field's schema inside an instance: required, optional, or only allowed as an entity override. */
const featureField = (f: Feature): z.ZodType => {
  if (f.source !== 'request') {
    const { entity, key, overridable } = f.source
    // Entity features come from the feature store; a request may carry them only as overrides.
    if (!overridable) return z.never({ error: `comes from the ${entity} entity (by ${key}) and may not be sent in the request` }).optional()
    return featureValue(f).optional()
  }
  return f.required ? featureValue(f) : featureValue(f).optional()
}

const entityId = z.string({ error: (iss) => `must be a non-empty string id, got ${describeValue(iss.input)}` }).refine(
  (s) => s.length > 0 && s.length <= MAX_STRING_LENGTH && !CONTROL.test(s),
  {
    error: (iss) => {
      const s = String(iss.input)
      if (s.length === 0) return 'must be a non-empty string id, got ""'
      if (s.length > MAX_STRING_LENGTH) return `must be at most ${MAX_STRING_LENGTH} characters, got ${s.length}`
      return `must not contain control characters, got ${describeValue(s)}`
    },
  },
)

/** Zod issues → `{ path, message }`, one per unknown key, in the order zod found them. */
const toFieldErrors = (issues: readonly z.core.$ZodIssue[], unknownMessage: (path: readonly PropertyKey[]) => string): FieldError[] => {
  const errors: FieldError[] = []
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const message = unknownMessage(issue.path)
      for (const key of issue.keys) errors.push({ path: formatPath([...issue.path, key]), message })
    } else {
      errors.push({ path: formatPath(issue.path), message: issue.message })
    }
  }
  return errors
}

/**
 * Compiles a feature spec into the validator of `POST /v1/models/{model}/predict` bodies:
 * `{ instances: [{feature: value}], entity?: {key: id} }`. Strict: unknown features and keys,
 * wrong types, non-integers, non-finite or out-of-range numbers, empty strings, entity features
 * sent without `overridable`, and zero or too many instances are refused, each with its own
 * `{ path, message }`. Compile once per spec (see `SchemaCache`); validating is the hot path:
 * accepted bodies pass a plain-code twin of the schema (`compileAcceptor`), zod explains refusals.
 */
export const compilePredictSchema = (spec: FeatureSpec, { maxInstances = 64 }: CompileOptions = {}): PredictValidator => {
  const entityKeys = [...new Set(spec.features.flatMap((f) => (f.source === 'request' ? [] : [f.source.key])))]
  const messages = {
    top: 'is not a field of a predict request (expected instances, entity)',
    entity: entityKeys.length ? `is not an entity key of this model (expected ${entityKeys.join(', ')})` : 'is not an entity key: this model takes no entity',
    feature: 'is not a feature of this model',
  }

  const instance = z.strictObject(Object.fromEntries(spec.features.map((f) => [f.name, featureField(f)])), {
    error: (iss) => (iss.code === 'unrecognized_keys' ? messages.feature : `must be an object of feature values, got ${describeValue(iss.input)}`),
  })
  const instances = z
    .array(z.unknown(), { error: (iss) => required(iss, 'must be a non-empty array of instances') })
    .min(1, { error: 'must contain at least one instance' })
    .max(maxInstances, { error: (iss) => `must contain at most ${maxInstances} instances, got ${Array.isArray(iss.input) ? iss.input.length : 'more'}` })
    // Elements are checked only once the count is acceptable: 10,000 instances fail once, cheaply.
    .pipe(z.array(instance))
  const entity = z.strictObject(Object.fromEntries(entityKeys.map((k) => [k, entityId.optional()])), {
    error: (iss) => (iss.code === 'unrecognized_keys' ? messages.entity : `must be an object of entity ids, got ${describeValue(iss.input)}`),
  })
  const schema = z.strictObject(
    { instances, entity: entity.optional() },
    {
      error: (iss) =>
        iss.code === 'unrecognized_keys' ? messages.top : `the request body must be a JSON object like {"instances": [...]}, got ${describeValue(iss.input)}`,
    },
  )

  const unknownMessage = (path: readonly PropertyKey[]) => (path.length === 0 ? messages.top : path[0] === 'entity' ? messages.entity : messages.feature)

  // Entity features that are required must be reachable: through the entity id, or (where the
  // spec allows overrides) sent in every instance.
  const requiredByKey = new Map<string, { entity: string; features: Feature[] }>()
  for (const f of spec.features) {
    if (f.source === 'request' || !f.required) continue
    const entry = requiredByKey.get(f.source.key) ?? { entity: f.source.entity, features: [] }
    entry.features.push(f)
    requiredByKey.set(f.source.key, entry)
  }
  const crossCheck = (body: unknown): FieldError[] => {
    if (!isRecord(body) || !Array.isArray(body.instances)) return []
    if (body.entity !== undefined && !isRecord(body.entity)) return [] // already refused as a whole
    const ids = body.entity ?? {}
    const errors: FieldError[] = []
    for (const [key, { entity: name, features }] of requiredByKey) {
      if (ids[key] !== undefined) continue
      const reachable = body.instances.every((row) => isRecord(row) && features.every((f) => row[f.name] !== undefined))
      if (!reachable) {
        errors.push({
          path: formatPath(['entity', key]),
          message: `is required: ${features.map((f) => f.name).join(', ')} come${features.length === 1 ? 's' : ''} from the ${name} entity`,
        })
      }
    }
    return errors
  }

  const accepts = compileAcceptor(spec, maxInstances, entityKeys)

  return {
    schema,
    maxInstances,
    validate(body) {
      // What the schema accepts is handed on as it came: zod's copy of it would be equal.
      if (accepts(body) && crossCheck(body).length === 0) return { success: true, data: body as PredictInput }
      const parsed = schema.safeParse(body)
      const errors = parsed.success ? [] : toFieldErrors(parsed.error.issues, unknownMessage)
      // Skip the cross-check when the instance count itself was refused (nothing else was looked at).
      if (!errors.some((e) => e.path === 'instances')) errors.push(...crossCheck(body))
      if (errors.length > 0) return { success: false, errors }
      return { success: true, data: parsed.data as PredictInput }
    },
  }
}

export interface SchemaCacheOptions {
  /** How long a keyed entry is trusted before the spec object is compared again (default 60 s). */
  ttlMs?: number
  /** Clock in ms; injectable for tests. */
  now?: () => number
  /** Keyed entries kept; the oldest goes first (default 256). */
  maxEntries?: number
}

interface KeyedEntry {
  spec: FeatureSpec
  validator: PredictValidator
  expiresAt: number
}

/**
 * Compiled validators, so a spec is compiled once and not per request. Two lookups:
 * - by spec object identity (a WeakMap; the default, always correct, nothing to expire);
 * - by a caller key such as `credit-risk@2`, for `specFor`s that hand out a fresh object per
 *   call: the entry is trusted for `ttlMs`; after that it is kept only if the spec object is the
 *   same one, else recompiled. So a changed spec under the same key takes effect within the TTL.
 */
export class SchemaCache {
  readonly #ttlMs: number
  readonly #now: () => number
  readonly #maxEntries: number
  #byIdentity = new WeakMap<FeatureSpec, Map<number, PredictValidator>>()
  readonly #byKey = new Map<string, KeyedEntry>()
  /** How many times a spec was compiled (for tests and metrics). */
  compiles = 0

  constructor({ ttlMs = 60_000, now = () => Date.now(), maxEntries = 256 }: SchemaCacheOptions = {}) {
    this.#ttlMs = ttlMs
    this.#now = now
    this.#maxEntries = maxEntries
  }

  get(spec: FeatureSpec, { maxInstances = 64, key }: { maxInstances?: number; key?: string } = {}): PredictValidator {
    if (key === undefined) {
      let bySize = this.#byIdentity.get(spec)
      if (!bySize) this.#byIdentity.set(spec, (bySize = new Map()))
      let validator = bySize.get(maxInstances)
      if (!validator) bySize.set(maxInstances, (validator = this.#compile(spec, maxInstances)))
      return validator
    }
    const at = `${key}\u0000${maxInstances}`
    const now = this.#now()
    const entry = this.#byKey.get(at)
    if (entry && (now < entry.expiresAt || entry.spec === spec)) {
      if (now >= entry.expiresAt) entry.expiresAt = now + this.#ttlMs
      return entry.validator
    }
    const validator = this.#compile(spec, maxInstances)
    this.#byKey.delete(at)
    this.#byKey.set(at, { spec, validator, expiresAt: now + this.#ttlMs })
    while (this.#byKey.size > this.#maxEntries) this.#byKey.delete(this.#byKey.keys().next().value as string)
    return validator
  }

  /** Forgets everything (both lookups). */
  clear(): void {
    this.#byIdentity = new WeakMap()
    this.#byKey.clear()
  }

  #compile(spec: FeatureSpec, maxInstances: number): PredictValidator {
    this.compiles++
    return compilePredictSchema(spec, { maxInstances })
  }
}

export const createSchemaCache = (options: SchemaCacheOptions = {}): SchemaCache => new SchemaCache(options)

/** The isolate's shared cache (real clock, 60 s TTL). */
export const schemaCache = createSchemaCache()
