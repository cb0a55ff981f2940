import { describe, expect, it } from 'vitest'
import { canonicalJson, dedupeInstances, fanOut } from '../../../../edge/pipeline/forward/dedupe.ts'
import { applicant, creditRisk, random, randomInstance } from '../validate/fixtures.ts'

describe('dedupeInstances', () => {
  it('computes identical instances once, whatever their key order, and fans results back out', () => {
    const a = applicant()
    const reordered = Object.fromEntries(Object.entries(a).reverse())
    const b = { ...a, age: 50 }
    const { unique, indexOf } = dedupeInstances([a, b, reordered, a, b])
    expect(unique).toEqual([a, b])
    expect(unique[0]).toBe(a)
    expect(indexOf).toEqual([0, 1, 0, 0, 1])
    expect(fanOut(['A', 'B'], indexOf)).toEqual(['A', 'B', 'A', 'A', 'B'])
  })

  it('keeps values of different types apart', () => {
    const { unique } = dedupeInstances<Record<string, unknown>>([{ x: 1 }, { x: '1' }, { x: true }, { x: 'true' }, { x: null }, { x: Number.NaN }, { x: 1 }])
    expect(unique).toHaveLength(6)
    expect(canonicalJson({ b: [1, { d: 2, c: 3 }], a: -0, u: undefined })).toBe('{"a":0,"b":[1,{"c":3,"d":2}]}')
  })

  it('every input maps to an equal instance (property)', () => {
    const rng = random(5)
    for (let n = 0; n < 200; n++) {
      const pool = Array.from({ length: rng.int(1, 4) }, () => randomInstance(creditRisk, rng))
      const instances = Array.from({ length: rng.int(1, 32) }, () => ({ ...rng.pick(pool) }))
      const { unique, indexOf } = dedupeInstances(instances)
      expect(unique.length).toBeLessThanOrEqual(pool.length)
      instances.forEach((instance, i) => expect(unique[indexOf[i]]).toEqual(instance))
    }
  })
})
