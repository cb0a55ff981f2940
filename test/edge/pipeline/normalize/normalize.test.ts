import { describe, expect, it } from 'vitest'
import { normalizeBody, undoPercentEncoding } from '../../../../edge/pipeline/normalize/normalize.ts'
import { Problem } from '../../../../edge/problem.ts'
import { compilePredictSchema } from '../../../../edge/pipeline/validate/compile-spec.ts'
import { applicant, creditRisk, creditRiskOverridable, random, randomInstance } from '../validate/fixtures.ts'

const body = (patch: Record<string, unknown> = {}, entity: Record<string, unknown> = { user_id: 'u-42' }) => ({ instances: [{ ...applicant(), ...patch }], entity })
const fixed = (patch: Record<string, unknown>, entity?: Record<string, unknown>) => {
  const r = normalizeBody(body(patch, entity), creditRisk)
  const b = r.body as { instances: Record<string, unknown>[]; entity: Record<string, unknown> }
  return { instance: b.instances[0], entity: b.entity, fixes: r.fixes, applied: r.applied }
}
const refusal = (input: unknown): Problem => {
  try {
    normalizeBody(input, creditRisk)
  } catch (err) {
    if (err instanceof Problem) return err
    throw err
  }
  throw new Error('expected a refusal')
}

const deepFreeze = <T>(value: T): T => {
  if (typeof value === 'object' && value !== null) {
    Object.values(value).forEach(deepFreeze)
    Object.freeze(value)
  }
  return value
}

describe('normalizeBody: strings', () => {
  it('leaves a clean body alone: same object, no fixes', () => {
    const input = body()
    expect(normalizeBody(input, creditRisk)).toEqual({ body: input, fixes: 0, applied: [] })
    expect(normalizeBody(input, creditRisk).body).toBe(input)
  })

  it('strips a leading BOM and surrounding whitespace, one fix each', () => {
    expect(fixed({ region: '\uFEFFnorth' })).toMatchObject({ instance: { region: 'north' }, fixes: 1, applied: [{ path: 'instances[0].region', fix: 'bom' }] })
    expect(fixed({ region: ' \tsouth\n' })).toMatchObject({ instance: { region: 'south' }, fixes: 1, applied: [{ path: 'instances[0].region', fix: 'whitespace' }] })
    expect(fixed({ region: '\uFEFF east ' })).toMatchObject({ instance: { region: 'east' }, fixes: 2 })
    expect(fixed({}, { user_id: ' u-42 ' })).toMatchObject({ entity: { user_id: 'u-42' }, fixes: 1, applied: [{ path: 'entity.user_id', fix: 'whitespace' }] })
  })

  it('NFC-normalizes strings', () => {
    const decomposed = 'Sa\u0303o Paulo' // ã as a + combining tilde
    expect(fixed({ region: decomposed })).toMatchObject({ instance: { region: 'S\u00e3o Paulo' }, fixes: 1, applied: [{ fix: 'nfc' }] })
    expect(fixed({ region: 'S\u00e3o Paulo' }).fixes).toBe(0)
  })

  it('undoes percent-encoding applied once or more', () => {
    expect(fixed({}, { user_id: 'ab%2Bc%2Fd%3D%3D' })).toMatchObject({ entity: { user_id: 'ab+c/d==' }, fixes: 1, applied: [{ path: 'entity.user_id', fix: 'percent-decoding' }] })
    expect(fixed({}, { user_id: 'u%252B1' })).toMatchObject({ entity: { user_id: 'u+1' }, fixes: 1 })
    expect(undoPercentEncoding('%252B')).toBe('+')
    expect(undoPercentEncoding('%25252B')).toBe('+')
    expect(fixed({ region: 'S%C3%A3o%20Paulo' })).toMatchObject({ instance: { region: 'São Paulo' }, fixes: 1 })
    expect(fixed({ region: 'Sa%CC%83o' })).toMatchObject({ instance: { region: 'S\u00e3o' }, fixes: 2 }) // decoded, then NFC
    expect(undoPercentEncoding('100%25')).toBe('100%') // an encoded literal percent
  })

  it.each([
    ['north%20', ['percent-decoding', 'whitespace']],
    ['%20north', ['percent-decoding', 'whitespace']],
    ['%09north%20%20', ['percent-decoding', 'whitespace']],
    [' north%20', ['percent-decoding', 'whitespace']],
    [' north', ['whitespace']],
    ['%EF%BB%BFnorth', ['percent-decoding', 'bom']],
    ['\uFEFF%20north', ['percent-decoding', 'bom', 'whitespace']],
  ])('decodes %j before trimming it, so it reads as north; every fix counted', (region, fixes) => {
    expect(fixed({ region })).toEqual({
      instance: { ...applicant(), region: 'north' }, entity: { user_id: 'u-42' },
      fixes: fixes.length, applied: fixes.map((fix) => ({ path: 'instances[0].region', fix })),
    })
  })

  it('trims a decoded entity id, and keeps whitespace that is inside the value', () => {
    expect(fixed({}, { user_id: 'u-42%20' })).toMatchObject({ entity: { user_id: 'u-42' }, fixes: 2 })
    expect(fixed({ region: 'north%20east' })).toMatchObject({ instance: { region: 'north east' }, fixes: 1 })
  })

  it('NFC-normalizes after decoding and trimming', () => {
    expect(fixed({ region: '%20Sa%CC%83o' })).toMatchObject({ instance: { region: 'S\u00e3o' }, fixes: 3, applied: [{ fix: 'percent-decoding' }, { fix: 'whitespace' }, { fix: 'nfc' }] })
  })

  it.each([
    ['50%zz', 'contains a "%" that starts no %XX escape'],
    ['100%', 'contains a "%" that starts no %XX escape'],
    ['a%2Bb+c', 'mixes %XX escapes with a raw "+"'],
    ['%C3%28', 'does not decode to UTF-8 text'],
    ['%FF', 'does not decode to UTF-8 text'],
    ['u%00', 'percent-decodes to control characters'],
    ['u%0Ab', 'percent-decodes to control characters'],
    ['%2541%25', 'still mixes %XX escapes with a bare "%"'],
    ['%2525252541', 'is still percent-encoded after 4 rounds'],
  ])('refuses the ambiguous value %j with 400 naming the field', (value, message) => {
    const p = refusal(body({}, { user_id: value }))
    expect(p.status).toBe(400)
    expect(p.title).toBe('Bad Request')
    expect(p.type).toBe('https://edge-infer.dev/problems/ambiguous-input')
    expect(p.extra.errors).toEqual([{ path: 'entity.user_id', message: expect.stringContaining(message) }])
    expect(p.detail).toContain('entity.user_id')
  })

  it('lists every ambiguous field at once', () => {
    const p = refusal({ instances: [applicant(), { ...applicant(), region: '%zz', housing: '%E0' }], entity: { user_id: '%' } })
    expect(p.extra.errors?.map((e) => e.path)).toEqual(['instances[1].region', 'instances[1].housing', 'entity.user_id'])
  })

  it('leaves unknown features and keys untouched (validation refuses them)', () => {
    const r = normalizeBody({ instances: [{ ...applicant(), colour: ' %zz ' }], entity: { user_id: 'u', other: ' x ' }, extra: ' y ' }, creditRisk)
    expect(r.fixes).toBe(0)
    expect(r.body).toMatchObject({ instances: [{ colour: ' %zz ' }], entity: { other: ' x ' }, extra: ' y ' })
  })

  it('does not mutate its input', () => {
    const input = deepFreeze(body({ region: ' north ', age: '42' }, { user_id: 'u%2B1' }))
    const copy = structuredClone(input)
    const r = normalizeBody(input, creditRisk)
    expect(r.fixes).toBe(3)
    expect(input).toEqual(copy)
  })
})

describe('normalizeBody: numbers and booleans', () => {
  it.each([
    ['age', '42', 42],
    ['debt_ratio', '-3.5', -3.5],
    ['income', '0', 0],
    ['income', '72000.25', 72000.25],
    ['age', '42.0', 42],
  ])('accepts the exact decimal %s = %j', (name, value, number) => {
    expect(fixed({ [name]: value })).toMatchObject({ instance: { [name]: number }, fixes: 1, applied: [{ path: `instances[0].${name}`, fix: 'numeric-string' }] })
  })

  it('trims a numeric string before reading it (two fixes)', () => {
    expect(fixed({ age: ' 42\n' })).toMatchObject({ instance: { age: 42 }, fixes: 2 })
  })

  it.each(['0x10', '1e3', '1E3', ' 4 2', 'NaN', 'Infinity', '-Infinity', '', '+5', '007', '.5', '5.', '1,5', '٤٢', `1${'0'.repeat(400)}`])(
    'leaves %j as it came, for validation to refuse',
    (value) => {
      expect(fixed({ income: value })).toMatchObject({ instance: { income: value }, fixes: 0 })
    },
  )

  it('never coerces booleans: "true" stays a string', () => {
    expect(fixed({ has_default_history: 'true' })).toMatchObject({ instance: { has_default_history: 'true' }, fixes: 0 })
  })

  it('percent-decodes only strings of category features and entity ids, not numbers', () => {
    expect(fixed({ age: '%34%32' })).toMatchObject({ instance: { age: '%34%32' }, fixes: 0 })
  })
})

describe('normalizeBody: double encoding', () => {
  it('refuses a body that is a JSON string of a JSON object', () => {
    const p = refusal(JSON.stringify(body()))
    expect(p.status).toBe(400)
    expect(p.type).toBe('https://edge-infer.dev/problems/double-encoded-body')
    expect(p.detail).toMatch(/encoded twice/)
    expect(p.extra.errors).toEqual([{ path: '', message: 'is a JSON-encoded string of JSON, not a JSON object' }])
  })

  it('refuses instances, an instance or entity sent as JSON strings', () => {
    const p = refusal({ instances: [JSON.stringify(applicant()), applicant()], entity: JSON.stringify({ user_id: 'u' }) })
    expect(p.extra.errors).toEqual([
      { path: 'instances[0]', message: 'is a JSON-encoded string of an object; send the object itself' },
      { path: 'entity', message: 'is a JSON-encoded string of an object; send the object itself' },
    ])
    expect(refusal({ instances: JSON.stringify([applicant()]) }).extra.errors).toEqual([
      { path: 'instances', message: 'is a JSON-encoded string of an array; send the array itself' },
    ])
  })

  it('leaves other strings and non-objects for validation', () => {
    expect(normalizeBody('hello', creditRisk)).toEqual({ body: 'hello', fixes: 0, applied: [] })
    expect(normalizeBody(null, creditRisk).body).toBeNull()
    expect(normalizeBody({ instances: 'x' }, creditRisk).body).toEqual({ instances: 'x' })
  })
})

describe('normalize + validate: properties', () => {
  const validator = compilePredictSchema(creditRiskOverridable)

  it('any valid body survives unchanged, with 0 fixes (1,000 random bodies)', () => {
    const rng = random(42)
    for (let n = 0; n < 1_000; n++) {
      const input = { instances: Array.from({ length: rng.int(1, 5) }, () => randomInstance(creditRiskOverridable, rng)), entity: { user_id: `user-${rng.int(0, 1e6)}` } }
      const snapshot = structuredClone(input)
      const { body: out, fixes } = normalizeBody(input, creditRiskOverridable)
      expect(fixes).toBe(0)
      const r = validator.validate(out)
      expect(r.success ? r.data : r.errors).toEqual(snapshot)
    }
  })

  it('percent-encoding a clean string 1–4 times is undone exactly (1 fix)', () => {
    const rng = random(3)
    const alphabet = [...'abcXYZ019-_.~+/= &?#:;,é€😀ü\u00e3']
    for (let n = 0; n < 500; n++) {
      const original = Array.from({ length: rng.int(1, 12) }, () => rng.pick(alphabet)).join('').trim() || 'x'
      let encoded = original
      const layers = rng.int(1, 4)
      for (let k = 0; k < layers; k++) encoded = encodeURIComponent(encoded)
      const r = normalizeBody(body({}, { user_id: encoded }), creditRisk)
      expect((r.body as { entity: { user_id: string } }).entity.user_id).toBe(original)
      expect(r.fixes).toBe(encoded === original ? 0 : 1)
    }
  })

  it('numbers written as their decimal strings come back as the same numbers (1 fix each)', () => {
    const rng = random(11)
    const v = compilePredictSchema(creditRisk)
    for (let n = 0; n < 500; n++) {
      const age = rng.int(18, 100)
      const ratio = Math.round(rng.next() * 5_000) / 1_000
      const r = normalizeBody(body({ age: String(age), debt_ratio: String(ratio) }), creditRisk)
      expect(r.fixes).toBe(2)
      const out = v.validate(r.body)
      expect(out.success && out.data.instances[0]).toMatchObject({ age, debt_ratio: ratio })
    }
  })
})
