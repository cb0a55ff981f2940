import { describe, expect, it } from 'vitest'
import { type Feature, featureSpec } from '../../../../shared/feature-spec.ts'
import { convertStored } from '../../../../edge/pipeline/enrich/convert.ts'

const spec = featureSpec.parse({
  input: 'x',
  features: [
    { name: 'score', type: 'number', min: -1, max: 2.5 },
    { name: 'count', type: 'integer', min: 0, max: 600 },
    { name: 'vip', type: 'boolean' },
    { name: 'tier', type: 'category', categories: ['gold', 'silver'] },
  ],
})
const [score, count, vip, tier] = spec.features as [Feature, Feature, Feature, Feature]

describe('convertStored', () => {
  it('numbers: exact decimals within [min, max]', () => {
    for (const [raw, value] of [['0', 0], ['2.5', 2.5], ['-1', -1], ['0.25', 0.25], ['.5', 0.5], ['1.', 1], ['2e0', 2], ['25E-1', 2.5], ['002', 2]] as const) {
      expect(convertStored(score, raw), raw).toBe(value)
    }
    for (const raw of ['', ' 1', '1 ', '+1', '2.6', '-1.01', 'NaN', 'Infinity', '0x1', '1,5', '1e', 'true', '1_0', '--1']) {
      expect(convertStored(score, raw), JSON.stringify(raw)).toBeUndefined()
    }
  })

  it('integers: digits only, safe, within [min, max]', () => {
    for (const [raw, value] of [['0', 0], ['48', 48], ['600', 600], ['0048', 48], ['-0', -0]] as const) expect(convertStored(count, raw), raw).toBe(value)
    for (const raw of ['', '48.0', '4.8e1', '601', '-1', ' 48', '48 ', '+48', '0x30', '9007199254740993', 'forty']) {
      expect(convertStored(count, raw), JSON.stringify(raw)).toBeUndefined()
    }
  })

  it('booleans: "true"/"false"/"1"/"0" only', () => {
    expect(convertStored(vip, 'true')).toBe(true)
    expect(convertStored(vip, '1')).toBe(true)
    expect(convertStored(vip, 'false')).toBe(false)
    expect(convertStored(vip, '0')).toBe(false)
    for (const raw of ['', 'TRUE', 'True', 'yes', 'no', '2', ' true', 't']) expect(convertStored(vip, raw), JSON.stringify(raw)).toBeUndefined()
  })

  it('categories: any non-empty string as is (an unknown one is encoded as unseen downstream)', () => {
    expect(convertStored(tier, 'gold')).toBe('gold')
    expect(convertStored(tier, 'platinum')).toBe('platinum')
    expect(convertStored(tier, '')).toBeUndefined()
    expect(convertStored(tier, 'x'.repeat(257))).toBeUndefined()
  })
})
