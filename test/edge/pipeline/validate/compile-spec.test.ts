import { describe, expect, it } from 'vitest'
import { featureSpec } from '../../../../shared/feature-spec.ts'
import { compilePredictSchema, createSchemaCache } from '../../../../edge/pipeline/validate/compile-spec.ts'
import { formatPath } from '../../../../edge/format.ts'
import { applicant, creditRisk, creditRiskOverridable, random, randomInstance } from './fixtures.ts'

const validator = compilePredictSchema(creditRisk)
const errorsOf = (body: unknown, v = validator) => {
  const r = v.validate(body)
  return r.success ? [] : r.errors
}
const withEntity = (instances: unknown[]) => ({ instances, entity: { user_id: 'u-42' } })
const one = (patch: Record<string, unknown>) => withEntity([{ ...applicant(), ...patch }])

describe('compilePredictSchema: what passes', () => {
  it('accepts a complete instance with an entity id and returns it as sent, no defaults filled', () => {
    const body = withEntity([applicant(), { ...applicant(), age: 18, income: 0 }])
    const r = validator.validate(body)
    expect(r).toEqual({ success: true, data: body })
  })

  it('accepts categories outside the known list (they are encoded as __unseen__ downstream)', () => {
    expect(errorsOf(one({ region: 'atlantis', housing: '__unseen__' }))).toEqual([])
  })

  it('accepts range bounds exactly and integers written as 42.0 (same number)', () => {
    expect(errorsOf(one({ age: 100, debt_ratio: 5, credit_utilization: 0, loan_term_months: 6 }))).toEqual([])
  })

  it('lets optional features be omitted without filling their default', () => {
    const spec = featureSpec.parse({ input: 'x', features: [{ name: 'a', type: 'number', min: 0, max: 1 }, { name: 'b', type: 'boolean', required: false, default: true }] })
    expect(compilePredictSchema(spec).validate({ instances: [{ a: 0.5 }] })).toEqual({ success: true, data: { instances: [{ a: 0.5 }] } })
  })

  it('a request without entity features needs no entity at all', () => {
    const spec = featureSpec.parse({ input: 'x', features: [{ name: 'a', type: 'integer', min: 0, max: 3 }] })
    const v = compilePredictSchema(spec)
    expect(v.validate({ instances: [{ a: 1 }] }).success).toBe(true)
    expect(errorsOf({ instances: [{ a: 1 }], entity: { user_id: 'u' } }, v)).toEqual([{ path: 'entity.user_id', message: 'is not an entity key: this model takes no entity' }])
  })

  it('any random valid instance passes unchanged (property, 500 cases)', () => {
    const rng = random(7)
    const v = compilePredictSchema(creditRiskOverridable)
    for (let n = 0; n < 500; n++) {
      const body = { instances: Array.from({ length: rng.int(1, 4) }, () => randomInstance(creditRiskOverridable, rng)), entity: { user_id: `u-${n}` } }
      const snapshot = structuredClone(body)
      const r = v.validate(body)
      expect(r.success ? r.data : r.errors).toEqual(snapshot)
    }
  })
})

describe('compilePredictSchema: numbers', () => {
  it.each([
    ['age', 17.5, 'must be an integer between 18 and 100, got 17.5'],
    ['age', 17, 'must be an integer between 18 and 100, got 17'],
    ['age', 101, 'must be an integer between 18 and 100, got 101'],
    ['income', -1, 'must be a number between 0 and 5000000, got -1'],
    ['debt_ratio', 5.0001, 'must be a number between 0 and 5, got 5.0001'],
    ['income', Number.NaN, 'must be a number between 0 and 5000000, got NaN'],
    ['income', Number.POSITIVE_INFINITY, 'must be a number between 0 and 5000000, got Infinity'],
    ['income', Number.NEGATIVE_INFINITY, 'must be a number between 0 and 5000000, got -Infinity'],
    ['income', 'NaN', 'must be a number between 0 and 5000000, got "NaN"'],
    ['income', '1e999', 'must be a number between 0 and 5000000, got "1e999"'],
    ['credit_lines', '0x10', 'must be an integer between 0 and 100, got "0x10"'],
    ['age', null, 'must be an integer between 18 and 100, got null'],
    ['age', true, 'must be an integer between 18 and 100, got true'],
  ])('%s = %s is refused', (name, value, message) => {
    expect(errorsOf(one({ [name]: value }))).toEqual([{ path: `instances[0].${name}`, message }])
  })

  it('refuses integers beyond 2^53 even where the range would allow them', () => {
    const spec = featureSpec.parse({ input: 'x', features: [{ name: 'n', type: 'integer', min: 0, max: 1e20 }] })
    expect(errorsOf({ instances: [{ n: 2 ** 53 + 2 }] }, compilePredictSchema(spec))[0].path).toBe('instances[0].n')
  })
})

describe('compilePredictSchema: booleans, categories, missing and unknown fields', () => {
  it.each([['true'], [1], [0], ['false'], [null]])('a boolean feature refuses %j (no coercion)', (value) => {
    expect(errorsOf(one({ has_default_history: value }))).toEqual([
      { path: 'instances[0].has_default_history', message: expect.stringMatching(/^must be a JSON boolean \(true or false\), got /) },
    ])
  })

  it('a category must be a non-empty string of at most 256 characters', () => {
    expect(errorsOf(one({ region: 3 }))).toEqual([
      { path: 'instances[0].region', message: 'must be a non-empty string (known: north, south, east, west, central; any other value counts as unseen), got 3' },
    ])
    expect(errorsOf(one({ housing: '' }))[0]).toEqual({ path: 'instances[0].housing', message: expect.stringMatching(/^must be a non-empty string .*, got ""$/) })
    expect(errorsOf(one({ housing: 'x'.repeat(257) }))).toEqual([{ path: 'instances[0].housing', message: 'must be at most 256 characters, got 257' }])
  })

  it('a missing required request feature is named', () => {
    const { age: _, ...rest } = applicant()
    expect(errorsOf(withEntity([applicant(), applicant(), rest]))).toEqual([{ path: 'instances[2].age', message: 'is required' }])
  })

  it('refuses unknown features, top-level fields and entity keys, one error per key', () => {
    expect(errorsOf({ ...one({ agee: 40, 'a b': 1 }), extra: 1, entity: { user_id: 'u', account_id: 'a' } })).toEqual([
      { path: 'instances[0].agee', message: 'is not a feature of this model' },
      { path: 'instances[0]["a b"]', message: 'is not a feature of this model' },
      { path: 'entity.account_id', message: 'is not an entity key of this model (expected user_id)' },
      { path: 'extra', message: 'is not a field of a predict request (expected instances, entity)' },
    ])
  })

  it('a "__proto__" key from JSON is an unknown feature, not a prototype', () => {
    const body = JSON.parse(`{"instances":[${JSON.stringify(applicant()).slice(0, -1)},"__proto__":{"age":1}}],"entity":{"user_id":"u"}}`)
    expect(errorsOf(body)).toEqual([{ path: 'instances[0].__proto__', message: 'is not a feature of this model' }])
  })
})

describe('compilePredictSchema: entity features', () => {
  it('refuses entity features in the request unless the spec makes them overridable', () => {
    expect(errorsOf(one({ account_age_months: 12 }))).toEqual([
      { path: 'instances[0].account_age_months', message: 'comes from the user entity (by user_id) and may not be sent in the request' },
    ])
  })

  it('validates overrides where the spec allows them', () => {
    const v = compilePredictSchema(creditRiskOverridable)
    expect(errorsOf(one({ account_age_months: 12, num_products: 3 }), v)).toEqual([])
    expect(errorsOf(one({ num_products: 21 }), v)).toEqual([{ path: 'instances[0].num_products', message: 'must be an integer between 0 and 20, got 21' }])
  })

  it('needs the entity id when required entity features cannot come from the request', () => {
    const message = 'is required: account_age_months, num_products come from the user entity'
    expect(errorsOf({ instances: [applicant()] })).toEqual([{ path: 'entity.user_id', message }])
    expect(errorsOf({ instances: [applicant()], entity: {} })).toEqual([{ path: 'entity.user_id', message }])
    const v = compilePredictSchema(creditRiskOverridable)
    const full = { ...applicant(), account_age_months: 1, num_products: 1 }
    expect(errorsOf({ instances: [full, full] }, v)).toEqual([])
    expect(errorsOf({ instances: [full, applicant()] }, v)).toEqual([{ path: 'entity.user_id', message }])
  })

  it.each([
    [42, 'must be a non-empty string id, got 42'],
    ['', 'must be a non-empty string id, got ""'],
    ['u\n1', 'must not contain control characters, got "u\\n1"'],
    ['u'.repeat(257), 'must be at most 256 characters, got 257'],
  ])('entity.user_id = %j is refused', (id, message) => {
    expect(errorsOf({ instances: [applicant()], entity: { user_id: id } })).toContainEqual({ path: 'entity.user_id', message })
  })
})

describe('compilePredictSchema: instances and body shape', () => {
  it('refuses zero instances and more than the maximum, without looking inside', () => {
    expect(errorsOf(withEntity([]))).toEqual([{ path: 'instances', message: 'must contain at least one instance' }])
    expect(errorsOf(withEntity(Array.from({ length: 65 }, () => ({ bad: 1 }))))).toEqual([
      { path: 'instances', message: 'must contain at most 64 instances, got 65' },
    ])
    const two = compilePredictSchema(creditRisk, { maxInstances: 2 })
    expect(errorsOf(withEntity([applicant(), applicant(), applicant()]), two)).toEqual([{ path: 'instances', message: 'must contain at most 2 instances, got 3' }])
    expect(errorsOf(withEntity(Array.from({ length: 64 }, applicant)))).toEqual([])
  })

  it('refuses a body that is not an object, a missing or non-array instances, non-object instances', () => {
    expect(errorsOf([applicant()])).toEqual([{ path: '', message: 'the request body must be a JSON object like {"instances": [...]}, got an array' }])
    expect(errorsOf(null)[0].path).toBe('')
    expect(errorsOf({ entity: { user_id: 'u' } })).toEqual([{ path: 'instances', message: 'is required' }])
    expect(errorsOf(withEntity('x' as never))).toEqual([{ path: 'instances', message: 'must be a non-empty array of instances, got "x"' }])
    expect(errorsOf(withEntity([applicant(), 3, [1]]))).toEqual([
      { path: 'instances[1]', message: 'must be an object of feature values, got 3' },
      { path: 'instances[2]', message: 'must be an object of feature values, got an array' },
    ])
    expect(errorsOf({ instances: [applicant()], entity: 'u-1' })).toEqual([{ path: 'entity', message: 'must be an object of entity ids, got "u-1"' }])
  })

  it('reports every error, in instance and spec order', () => {
    expect(errorsOf(withEntity([{ ...applicant(), age: 17.5, region: '' }, applicant(), { ...applicant(), income: -5, has_default_history: 'no' }]))).toEqual([
      { path: 'instances[0].age', message: 'must be an integer between 18 and 100, got 17.5' },
      { path: 'instances[0].region', message: expect.stringContaining('must be a non-empty string') },
      { path: 'instances[2].income', message: 'must be a number between 0 and 5000000, got -5' },
      { path: 'instances[2].has_default_history', message: 'must be a JSON boolean (true or false), got "no"' },
    ])
  })

  it('exposes the zod schema itself', () => {
    expect(validator.schema.safeParse(withEntity([applicant()])).success).toBe(true)
    expect(validator.schema.safeParse(withEntity([{ ...applicant(), age: 1 }])).success).toBe(false)
  })

  it('formats paths like instances[3].age', () => {
    expect(formatPath(['instances', 3, 'age'])).toBe('instances[3].age')
    expect(formatPath(['entity', 'user_id'])).toBe('entity.user_id')
    expect(formatPath([])).toBe('')
    expect(formatPath(['instances', 0, 'a-b'])).toBe('instances[0]["a-b"]')
  })
})

describe('SchemaCache', () => {
  it('compiles a spec object once per instance limit', () => {
    const cache = createSchemaCache()
    const a = cache.get(creditRisk)
    expect(cache.get(creditRisk)).toBe(a)
    expect(cache.get(creditRisk, { maxInstances: 64 })).toBe(a)
    expect(cache.get(creditRisk, { maxInstances: 8 })).not.toBe(a)
    expect(cache.compiles).toBe(2)
  })

  it('by key: trusts an entry for the TTL, then keeps it only for the same spec object', () => {
    let now = 1_000
    const cache = createSchemaCache({ ttlMs: 60_000, now: () => now })
    const fresh = () => structuredClone(creditRisk)
    const first = fresh()
    const v1 = cache.get(first, { key: 'credit-risk@2' })
    expect(cache.get(fresh(), { key: 'credit-risk@2' })).toBe(v1) // a new object within the TTL: hit
    now += 60_000
    expect(cache.get(first, { key: 'credit-risk@2' })).toBe(v1) // expired but the same object: kept, not recompiled
    expect(cache.compiles).toBe(1)
    now += 60_000
    const v2 = cache.get(fresh(), { key: 'credit-risk@2' }) // expired and a different object: recompiled
    expect(v2).not.toBe(v1)
    expect(cache.compiles).toBe(2)
    expect(cache.get(first, { key: 'credit-risk@1' })).not.toBe(v2)
    cache.clear()
    cache.get(first, { key: 'credit-risk@2' })
    expect(cache.compiles).toBe(4)
  })

  it('by key: keeps at most maxEntries, dropping the oldest', () => {
    const cache = createSchemaCache({ maxEntries: 2, now: () => 0 })
    const a = cache.get(creditRisk, { key: 'a' })
    cache.get(creditRisk, { key: 'b' })
    cache.get(creditRisk, { key: 'c' })
    expect(cache.get(creditRisk, { key: 'c' })).toBeDefined()
    expect(cache.compiles).toBe(3)
    expect(cache.get(creditRisk, { key: 'a' })).not.toBe(a)
    expect(cache.compiles).toBe(4)
  })
})
