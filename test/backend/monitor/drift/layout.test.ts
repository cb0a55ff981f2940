import { describe, expect, it } from 'vitest'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { LATENCY_BOUNDS_US } from '../../../../backend/monitor/drift/latency.ts'
import { modelConfig } from '../../../../backend/repository/model-config.ts'
import { baseline, config } from './fixture.ts'

describe('driftLayout', () => {
  const layout = driftLayout('toy', 1, config, baseline)

  it('lays the counts out flat: features in spec order (a numeric one followed by its sums), then prediction, rows and health', () => {
    expect(layout.features.map(({ name, kind, column, columns, offset, size, sums }) => ({ name, kind, column, columns, offset, size, sums }))).toEqual([
      // [missing, below_min, 4 bins, above_max], then Σ steps and Σ steps² at 7 and 8
      { name: 'score', kind: 'numeric', column: 0, columns: 1, offset: 0, size: 7, sums: 7 },
      // [missing, blue, red, __other__, __unseen__]
      { name: 'color', kind: 'categorical', column: 1, columns: 5, offset: 9, size: 5, sums: -1 },
      // [missing, false, true]
      { name: 'flag', kind: 'boolean', column: 6, columns: 1, offset: 14, size: 3, sums: -1 },
    ])
    expect(layout.prediction).toMatchObject({ offset: 17, classes: 21, nan: 23, sums: 24 })
    expect(layout.rows).toBe(26)
    expect(layout.health).toEqual({ requests: 27, errors: 28, rows: 29, latency: 30 })
    expect(layout.size).toBe(30 + LATENCY_BOUNDS_US.length + 1)
    // 4096 grid steps over the clamp range: [min, max] of the feature, ±10 for the logit.
    expect(layout.features[0].scale).toBeCloseTo(4096 / (Math.fround(9.9) - Math.fround(0.1)), 9)
    expect(layout.prediction.scale).toBe(4096 / 20)
  })

  it('sends each category column to its baseline category, __other__ or __unseen__', () => {
    // Spec columns red, green, blue, violet, __unseen__; baseline keeps blue (1) and red (2).
    expect([...layout.features[1].slotOfColumn]).toEqual([2, 3, 1, 3, 4])
  })

  it('rounds numeric edges and range to FP32, as the tensor holds the values', () => {
    expect(layout.features[0].edges).toEqual([Math.fround(0.35), Math.fround(1.1), Math.fround(2.2)])
    expect(layout.features[0]).toMatchObject({ min: Math.fround(0.1), max: Math.fround(9.9) })
  })

  it('fingerprints what gives an index its meaning, so different bins never add up', () => {
    expect(driftLayout('toy', 1, config, structuredClone(baseline)).fingerprint).toBe(layout.fingerprint)
    const moved = structuredClone(baseline)
    moved.prediction.edges[0] = 0.2
    expect(driftLayout('toy', 1, config, moved).fingerprint).not.toBe(layout.fingerprint)
  })

  it('refuses a baseline or config that does not fit, saying why', () => {
    const swapped = { ...baseline, features: [baseline.features[1], baseline.features[0], baseline.features[2]] }
    expect(() => driftLayout('toy', 1, config, swapped)).toThrow('baseline feature "color" stands where the spec has "score"')
    const foreign = structuredClone(baseline)
    foreign.features[1] = { name: 'color', kind: 'categorical', categories: ['red', 'pink'] }
    expect(() => driftLayout('toy', 1, config, foreign)).toThrow('categories the spec does not: pink')
    const short = { ...baseline, features: baseline.features.slice(0, 2) }
    expect(() => driftLayout('toy', 1, config, short)).toThrow('the baseline has 2 features, the spec 3')
    const multiclass = modelConfig.parse({ ...config, postprocess: { output: 'p', labels: ['a', 'b', 'c'] } })
    expect(() => driftLayout('toy', 1, multiclass, baseline)).toThrow('exactly two labels')
    const narrow = modelConfig.parse({ ...config, inputs: [{ name: 'x', datatype: 'FP32', dims: [6] }] })
    expect(() => driftLayout('toy', 1, narrow, baseline)).toThrow('not an FP32 tensor of 7 columns')
  })
})
