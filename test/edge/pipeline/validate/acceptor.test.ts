import { describe, expect, it } from 'vitest'
import { type FeatureSpec, featureSpec } from '../../../../shared/feature-spec.ts'
import { compileAcceptor } from '../../../../edge/pipeline/validate/acceptor.ts'
import { compilePredictSchema } from '../../../../edge/pipeline/validate/compile-spec.ts'
import { creditRisk, creditRiskOverridable, random, randomInstance } from './fixtures.ts'

/** Two entities, one overridable; an optional boolean; a required and an optional category. */
const mixed: FeatureSpec = featureSpec.parse({
  input: 'x',
  features: [
    { name: 'amount', type: 'number', min: -5, max: 5 },
    { name: 'count', type: 'integer', min: 0, max: 9, required: false, default: 0 },
    { name: 'flag', type: 'boolean', required: false, default: false },
    { name: 'color', type: 'category', categories: ['red', 'blue'] },
    { name: 'tier', type: 'category', categories: ['gold'], required: false, default: 'gold', source: { entity: 'user', key: 'user_id', overridable: true } },
    { name: 'risk', type: 'number', min: 0, max: 1, default: 0.5, source: { entity: 'merchant', key: 'merchant_id' } },
  ],
})

const ODD_VALUES: unknown[] = [
  null, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0, 0, 1, 1.5, -1, 2 ** 53, 1e308, 1e-9,
  '', ' ', 'x', '12', 'x'.repeat(256), 'x'.repeat(257), 'a\u0001b', true, false, [], {}, [1], { a: 1 },
]
const ODD_CONTAINERS: unknown[] = [null, 1, 'x', [], {}, [{}], true]

type Rng = ReturnType<typeof random>
type Body = Record<string, unknown> & { instances?: unknown; entity?: unknown }

const entityKeysOf = (spec: FeatureSpec) => [...new Set(spec.features.flatMap((f) => (f.source === 'request' ? [] : [f.source.key])))]

const validBody = (spec: FeatureSpec, rng: Rng, maxInstances: number): Body => {
  const instances = Array.from({ length: rng.int(1, Math.min(3, maxInstances)) }, () => randomInstance(spec, rng))
  const keys = entityKeysOf(spec)
  return keys.length > 0 && rng.next() < 0.8 ? { instances, entity: Object.fromEntries(keys.map((k, i) => [k, `id-${i}`])) } : { instances }
}

/** One random change that may or may not make the body invalid. */
const mutate = (spec: FeatureSpec, body: Body, rng: Rng, maxInstances: number): void => {
  const instances = Array.isArray(body.instances) ? (body.instances as unknown[]) : undefined
  const someInstance = () => (instances && instances.length > 0 ? instances[rng.int(0, instances.length - 1)] : undefined)
  const feature = () => rng.pick(spec.features)
  switch (rng.int(0, 11)) {
    case 0: {
      const target = someInstance()
      if (target && typeof target === 'object') delete (target as Record<string, unknown>)[feature().name]
      return
    }
    case 1:
    case 2:
    case 3: {
      const target = someInstance()
      const f = feature()
      const bound = f.type === 'number' || f.type === 'integer' ? rng.pick([f.min, f.max, f.min - 1, f.max + 1, f.min - 1e-9, f.max + 1e-9, (f.min + f.max) / 2]) : undefined
      if (target && typeof target === 'object') (target as Record<string, unknown>)[f.name] = rng.next() < 0.3 && bound !== undefined ? bound : rng.pick(ODD_VALUES)
      return
    }
    case 4: {
      const target = rng.pick([someInstance(), body, body.entity])
      if (target && typeof target === 'object') (target as Record<string, unknown>)[rng.pick(['unknown', 'instances', 'entity', 'user_id', feature().name, 'toString'])] = rng.pick(ODD_VALUES)
      return
    }
    case 5:
      body.instances = rng.pick([...ODD_CONTAINERS, [], Array.from({ length: maxInstances }, () => randomInstance(spec, rng)), Array.from({ length: maxInstances + 1 }, () => randomInstance(spec, rng))])
      return
    case 6:
      if (instances && instances.length > 0) instances[rng.int(0, instances.length - 1)] = rng.pick(ODD_CONTAINERS)
      return
    case 7:
      body.entity = rng.pick([...ODD_CONTAINERS, undefined])
      return
    case 8: {
      const keys = entityKeysOf(spec)
      if (body.entity && typeof body.entity === 'object' && keys.length > 0) (body.entity as Record<string, unknown>)[rng.pick(keys)] = rng.pick(ODD_VALUES)
      return
    }
    case 9:
      delete body.entity
      return
    case 10: {
      // An own "__proto__" key, as JSON.parse makes one.
      const target = rng.pick([someInstance(), body, body.entity])
      if (target && typeof target === 'object') Object.defineProperty(target, '__proto__', { value: 1, enumerable: true, configurable: true, writable: true })
      return
    }
    case 11:
      if (instances && instances.length < maxInstances) instances.push(randomInstance(spec, rng))
  }
}

describe('compileAcceptor', () => {
  it.each([
    ['credit-risk', creditRisk, 64],
    ['credit-risk with overridable entity features', creditRiskOverridable, 64],
    ['a mixed spec with two entities', mixed, 3],
  ])('gives the zod schema\'s verdict on valid and mutated bodies (%s, 4,000 cases)', (_, spec, maxInstances) => {
    const rng = random(20261129)
    const { schema } = compilePredictSchema(spec, { maxInstances })
    const accepts = compileAcceptor(spec, maxInstances, entityKeysOf(spec))
    let accepted = 0
    for (let n = 0; n < 4_000; n++) {
      const body = validBody(spec, rng, maxInstances)
      const changes = n % 4 === 0 ? 0 : rng.int(1, 3)
      for (let m = 0; m < changes; m++) mutate(spec, body, rng, maxInstances)
      const verdict = schema.safeParse(body).success
      if (accepts(body) !== verdict) expect.fail(`zod says ${verdict ? 'accept' : 'refuse'} for ${JSON.stringify(body, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))}`)
      if (verdict) accepted++
    }
    // Both verdicts are exercised, not just one.
    expect(accepted).toBeGreaterThan(800)
    expect(accepted).toBeLessThan(3_200)
  })

  it('refuses what is not a body at all', () => {
    const accepts = compileAcceptor(creditRisk, 64, ['user_id'])
    for (const body of [null, undefined, 1, 'x', [], [{}], true]) expect(accepts(body)).toBe(false)
  })
})

describe('validate: the accepted path hands on what zod would', () => {
  it('returns the body zod would have returned, for random valid bodies', () => {
    const rng = random(11)
    const v = compilePredictSchema(mixed, { maxInstances: 3 })
    for (let n = 0; n < 500; n++) {
      const body = { ...validBody(mixed, rng, 3), entity: { user_id: `u-${n}`, merchant_id: 'm-1' } }
      const zod = v.schema.safeParse(body)
      expect(zod.success).toBe(true)
      expect(v.validate(body)).toEqual({ success: true, data: zod.data })
    }
  })
})
