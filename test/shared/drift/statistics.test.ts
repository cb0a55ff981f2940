import { describe, expect, it } from 'vitest'
import {
  binIndex, binnedKs, binnedWasserstein, chiSquare, chiSquareQuantile, chiSquareSf, jensenShannonDistance, kolmogorovSf, meanShift,
  noDriftWasserstein, noDriftWassersteinLevel, psi, totalVariation, twoSidedNormalP,
} from '../../../shared/drift/statistics.ts'
import { createRandom } from '../../../tools/training/random.ts'

/**
 * Reference values from Debian python3-scipy 1.17.1: `kstwobign.sf`, `chi2.sf`, `chi2.ppf`,
 * `chi2_contingency(..., correction=False)` on the bins not empty in both, and numpy cumulative
 * shares for KS D. PSI (no scipy function) and the JS distance come from mpmath at 60 digits:
 * scipy's `jensenshannon` itself is off by 3e-12 relative on the nearly equal vectors.
 */

const uniform = (count: number, bins = 20): number[] => new Array<number>(bins).fill(count)
const blocks = (...counts: number[]): number[] => counts.flatMap((c) => new Array<number>(5).fill(c))

interface Case {
  reference: number[]
  observed: number[]
  psi: number
  js: number
  d: number
  ksP: number
  chi: [statistic: number, df: number, pValue: number]
}

const cases: Record<string, Case> = {
  moderate: {
    reference: [120, 340, 560, 410, 230, 90, 40, 10],
    observed: [100, 300, 600, 450, 250, 60, 30, 20],
    psi: 0.02145251952299048, js: 0.062005235945440246, d: 0.034561080417434, ksP: 0.2312155174660022,
    chi: [19.125641301440112, 7, 0.007802734018978998],
  },
  'empty bins (two empty in both, one only in the reference)': {
    reference: [0, 50, 200, 0, 300, 150, 0],
    observed: [5, 40, 210, 0, 280, 180, 0],
    psi: 0.04265190040493363, js: 0.07684552414499345, d: 0.03746253746253747, ksP: 0.7036230704200406,
    chi: [9.614011223461487, 4, 0.047456557803892074],
  },
  disjoint: {
    reference: [10, 0, 0],
    observed: [0, 0, 7],
    psi: 18.41883867587797, js: 1, d: 1, ksP: 0.0005302579683460036,
    chi: [17, 1, 3.7379818401701594e-5],
  },
  'nearly equal': {
    reference: [100_000, 100_001, 99_999],
    observed: [100_001, 100_000, 99_999],
    psi: 6.666633333555555e-11, js: 3.467333061898147e-6, d: 3.3333333333551707e-6, ksP: 1,
    chi: [9.999950000249999e-6, 2, 0.9999950000374997],
  },
  'KS p-value near 1e-12': {
    reference: uniform(2500),
    observed: blocks(2500, 2740, 2500, 2260),
    psi: 0.004622234570778825, js: 0.028865813931493463, d: 0.024, ksP: 6.213680475086538e-13,
    chi: [115.46603374174097, 19, 7.763850592914152e-16],
  },
  'chi-square p-value near 1e-12': {
    reference: uniform(2500),
    observed: blocks(2500, 2720, 2500, 2280),
    psi: 0.003882041621514244, js: 0.026454621112571537, d: 0.022, ksP: 6.181637496816378e-11,
    chi: [96.98776831946648, 19, 1.8733475256252896e-12],
  },
  'p-values near 1e-22': {
    reference: uniform(1000),
    observed: blocks(1000, 1200, 950, 850),
    psi: 0.015851703875708674, js: 0.053433631923950585, d: 0.05, ksP: 3.857499695927479e-22,
    chi: [158.13015813015812, 19, 5.8533705788869034e-24],
  },
  'p-values that underflow': {
    reference: uniform(5000),
    observed: [...uniform(4000, 10), ...uniform(6000, 10)],
    psi: 0.040546510810816436, js: 0.08543510262458853, d: 0.1, ksP: 0,
    chi: [2020.20202020202, 19, 0],
  },
}

const expectRelative = (actual: number, expected: number, tolerance = 1e-9): void => {
  if (expected === 0) expect(actual).toBe(0)
  else expect(Math.abs(actual - expected) / Math.abs(expected), `${actual} vs ${expected}`).toBeLessThanOrEqual(tolerance)
}

describe.each(Object.entries(cases))('%s', (_, c) => {
  // Shares rounded to doubles limit nearly equal vectors to ~1e-11 relative; the rest agree to 1e-15.
  it('PSI', () => expectRelative(psi(c.reference, c.observed), c.psi))
  it('Jensen-Shannon distance', () => expectRelative(jensenShannonDistance(c.reference, c.observed), c.js))
  it('binned KS', () => {
    const { d, pValue } = binnedKs(c.reference, c.observed)
    expectRelative(d, c.d)
    expectRelative(pValue, c.ksP)
  })
  it('chi-square', () => {
    const { statistic, df, pValue } = chiSquare(c.reference, c.observed)
    expect(df).toBe(c.chi[1])
    expectRelative(statistic, c.chi[0])
    expectRelative(pValue, c.chi[2])
  })
})

describe('equal shares', () => {
  const reference = [100, 200, 300]
  const observed = [50, 100, 150]
  it('give zero distance and no evidence of drift', () => {
    expect(psi(reference, observed)).toBe(0)
    expect(jensenShannonDistance(reference, observed)).toBe(0)
    expect(binnedKs(reference, observed)).toEqual({ d: 0, pValue: 1 })
    expect(chiSquare(reference, observed)).toEqual({ statistic: 0, df: 2, pValue: 1 })
  })
})

describe('degenerate input', () => {
  it('reports no evidence when either side has no counts', () => {
    for (const [reference, observed] of [[[0, 0, 0], [1, 2, 3]], [[1, 2, 3], [0, 0, 0]], [[], []]]) {
      expect(psi(reference, observed)).toBe(0)
      expect(jensenShannonDistance(reference, observed)).toBe(0)
      expect(binnedKs(reference, observed)).toEqual({ d: 0, pValue: 1 })
      expect(chiSquare(reference, observed)).toEqual({ statistic: 0, df: 0, pValue: 1 })
    }
  })
  it('has no degrees of freedom when a single bin holds everything', () => {
    expect(chiSquare([0, 40, 0], [0, 9, 0])).toEqual({ statistic: 0, df: 0, pValue: 1 })
  })
  it('floors empty shares at epsilon so PSI stays finite', () => {
    const epsilon = 1e-3
    expectRelative(psi([1, 0], [0, 1], epsilon), 2 * (1 - epsilon) * Math.log(1 / epsilon), 1e-14)
  })
  it('refuses vectors of different lengths and counts that are not counts', () => {
    expect(() => psi([1, 2], [1, 2, 3])).toThrow(/differ in length/)
    expect(() => chiSquare([1, -1], [1, 1])).toThrow(/reference count at bin 1/)
    expect(() => binnedKs([1, 1], [1, Number.NaN])).toThrow(/observed count at bin 1/)
    expect(() => jensenShannonDistance([1, Number.POSITIVE_INFINITY], [1, 1])).toThrow(RangeError)
  })
})

describe('kolmogorovSf', () => {
  // Both sides of the 0.82 cut-over between the two series.
  const reference: [number, number][] = [
    [0.05, 1], [0.2, 0.999999999999495], [0.5, 0.9639452436648751], [0.8, 0.5441424115741981],
    [0.82, 0.5119717052984973], [0.9, 0.3927307079406543], [1, 0.26999967167735456], [1.36, 0.049485876755377876],
    [2, 0.0006709252557796953], [3, 3.045995948942526e-8], [3.8, 5.735950017776196e-13], [5, 3.8574996959278356e-22],
    [10, 2.767793053473475e-87],
  ]
  it.each(reference)('at %d matches scipy', (x, sf) => expectRelative(kolmogorovSf(x), sf, 1e-12))
  it('is 1 at and below zero', () => {
    expect(kolmogorovSf(0)).toBe(1)
    expect(kolmogorovSf(-3)).toBe(1)
  })
})

describe('chiSquareSf', () => {
  const reference: [number, number, number][] = [
    [0.5, 1, 0.47950012218695337], [3.84, 1, 0.05004352124870519], [30, 5, 1.4748581038443073e-5],
    [100, 19, 5.355560750435117e-13], [150, 22, 4.785409601203836e-21], [1000, 100, 2.3060767380354624e-148],
    [60, 100, 0.999481108537452], [200, 5, 2.8406228986415534e-41], [0.001, 3, 0.9999915920809419],
    [7.5, 2.5, 0.038169088215206766],
  ]
  it.each(reference)('at x = %d, df = %d matches scipy', (x, df, sf) => expectRelative(chiSquareSf(x, df), sf, 1e-11))
  it('is 1 at zero and refuses df ≤ 0', () => {
    expect(chiSquareSf(0, 4)).toBe(1)
    expect(() => chiSquareSf(1, 0)).toThrow(RangeError)
  })
})

describe('chiSquareQuantile', () => {
  const reference: [number, number, number][] = [
    [0.99, 1, 6.6348966010212145], [0.99, 5, 15.08627246938899], [0.99, 19, 36.19086912927004],
    [0.99, 22, 40.289360437593864], [0.99, 100, 135.80672317102676],
    [0.999, 1, 10.827566170662733], [0.999, 5, 20.515005652432873], [0.999, 19, 43.82019596451753],
    [0.999, 22, 48.26794229083518], [0.999, 100, 149.44925277903886],
    // The lower tail, where Wilson-Hilferty goes negative for small df, and a far upper tail.
    [0.5, 1, 0.454936423119572], [0.01, 1, 0.00015708785790970184], [1e-6, 1, 1.5707963267957187e-12],
    [0.05, 19, 10.117013063859044], [1e-10, 5, 0.00032335571462496966], [1 - 1e-12, 5, 65.23868252258353],
  ]
  it.each(reference)('at p = %d, df = %d matches scipy', (p, df, x) => expectRelative(chiSquareQuantile(p, df), x, 1e-10))
  it('inverts chiSquareSf', () => {
    for (const df of [1, 3, 19, 250]) for (const p of [0.2, 0.9, 0.9999]) expectRelative(1 - chiSquareSf(chiSquareQuantile(p, df), df), p, 1e-12)
  })
  it('maps the ends of [0, 1] to 0 and infinity and refuses the rest', () => {
    expect(chiSquareQuantile(0, 3)).toBe(0)
    expect(chiSquareQuantile(1, 3)).toBe(Number.POSITIVE_INFINITY)
    expect(() => chiSquareQuantile(1.5, 3)).toThrow(RangeError)
    expect(() => chiSquareQuantile(0.5, -1)).toThrow(RangeError)
  })
})

describe('meanShift', () => {
  it('is the mean difference in reference sd, its SE from both sds and both sizes, and z their ratio', () => {
    const shift = meanShift({ n: 10_000, mean: 5, sd: 2 }, { n: 1_000, mean: 5.5, sd: 4 })!
    expect(shift.smd).toBeCloseTo(0.25, 15)
    // √(2²/10,000 + 4²/1,000) / 2
    expect(shift.se).toBeCloseTo(Math.sqrt(4 / 10_000 + 16 / 1_000) / 2, 15)
    expect(shift.z).toBeCloseTo(0.25 / shift.se, 12)
    expect(meanShift({ n: 10_000, mean: 5, sd: 2 }, { n: 1_000, mean: 4.5, sd: 2 })!.smd).toBeCloseTo(-0.25, 15)
  })

  it('cannot tell with a constant reference or fewer than 2 values on a side', () => {
    expect(meanShift({ n: 100, mean: 1, sd: 0 }, { n: 100, mean: 2, sd: 1 })).toBeUndefined()
    expect(meanShift({ n: 1, mean: 1, sd: 1 }, { n: 100, mean: 2, sd: 1 })).toBeUndefined()
    expect(meanShift({ n: 100, mean: 1, sd: 1 }, { n: 1, mean: 2, sd: 0 })).toBeUndefined()
  })
})

describe('binnedWasserstein', () => {
  const bounds = [0, 1, 2, 3, 4]
  it('is 0 for equal shares, and the shift for mass moved one bin over', () => {
    expect(binnedWasserstein(bounds, [1, 2, 3, 4], [10, 20, 30, 40])).toBe(0)
    // Uniform on [0, 3] against uniform on [1, 4]: W1 = 1.
    expect(binnedWasserstein(bounds, [1, 1, 1, 0], [0, 1, 1, 1])).toBeCloseTo(1, 15)
    expect(binnedWasserstein([0, 10, 20, 30, 40], [1, 1, 1, 0], [0, 1, 1, 1])).toBeCloseTo(10, 14)
  })

  it('integrates a gap that changes sign inside a bin as two triangles', () => {
    // All mass in bin 0 against half in bin 0 and half in bin 1 with uneven bins: the CDF gap is
    // linear 0 → 0.5 over [0, 1], then 0.5 → 0 over [1, 3] (no sign change): 0.25 + 0.5.
    expect(binnedWasserstein([0, 1, 3], [1, 0], [1, 1])).toBeCloseTo(0.75, 15)
    // [0.5, 0.5, 0] against [0, 1, 0] over unit bins: gap 0 → 0.5 → 0; then [0.25, 0, 0.75] against
    // [0, 0.5, 0.5]: gap 0 → 0.25 → −0.25 → 0, the middle bin two triangles of 1/16.
    expect(binnedWasserstein([0, 1, 2, 3], [1, 1, 0], [0, 1, 0])).toBeCloseTo(0.5, 15)
    expect(binnedWasserstein([0, 1, 2, 3], [1, 0, 3], [0, 1, 1])).toBeCloseTo(0.125 + 0.125 + 0.125, 15)
  })

  it('gives 0 without mass on a side and refuses bounds that do not fit the bins', () => {
    expect(binnedWasserstein(bounds, [0, 0, 0, 0], [1, 2, 3, 4])).toBe(0)
    expect(() => binnedWasserstein([0, 1], [1, 2], [1, 2])).toThrow(RangeError)
  })
})

describe('binIndex', () => {
  const edges = [1, 2, 5]
  it('counts the edges at or below a value, so a value on an edge goes to the upper bin', () => {
    expect([-1, 0.999, 1, 1.5, 2, 4.9, 5, 100].map((v) => binIndex(edges, v))).toEqual([0, 0, 1, 1, 2, 2, 3, 3])
  })
  it('puts everything in bin 0 when there are no edges', () => {
    expect(binIndex([], 42)).toBe(0)
  })
})

describe('totalVariation and chi-square on a small table, by hand', () => {
  // Shares 0.1 0.2 0.3 0.4 against 0.2 0.2 0.2 0.4.
  const reference = [10, 20, 30, 40]
  const observed = [20, 20, 20, 40]

  it('is half the summed share gaps: ½ (0.1 + 0 + 0.1 + 0) = 0.1', () => {
    expect(totalVariation(reference, observed)).toBeCloseTo(0.1, 15)
    expect(totalVariation(observed, reference)).toBeCloseTo(0.1, 15)
    expect(totalVariation([5, 0], [0, 7])).toBe(1)
    expect(totalVariation([3, 4], [6, 8])).toBe(0)
    expect(totalVariation([0, 0], [1, 2])).toBe(0)
  })

  it('χ² of the 2×4 table: expected counts 15 20 25 40 per row, 2·(25/15 + 25/25) = 16/3 on 3 df', () => {
    const { statistic, df, pValue } = chiSquare(reference, observed)
    expect(statistic).toBeCloseTo(16 / 3, 12)
    expect(df).toBe(3)
    // scipy.stats.chi2.sf(16/3, 3)
    expectRelative(pValue, 0.14895400671141998)
  })

  it('the z gate\'s false-alarm rates as p-values: 2Φ(−3), 2Φ(−4) (scipy.stats.norm.sf)', () => {
    expectRelative(twoSidedNormalP(3), 0.0026997960632601866)
    expectRelative(twoSidedNormalP(4), 6.334248366623973e-5)
  })
})

describe('noDriftWasserstein', () => {
  it('has the mean √(2/π)·∫ √(F(1 − F)) dx: √(2π)/8 for the uniform on [0, 1], twice that on [0, 2]', () => {
    // ∫₀¹ √(u(1 − u)) du = π/8.
    expect(noDriftWasserstein([0, 1], [7]).mean).toBeCloseTo(Math.sqrt(2 * Math.PI) / 8, 12)
    expect(noDriftWasserstein([0, 1, 2], [3, 3]).mean).toBeCloseTo(Math.sqrt(2 * Math.PI) / 4, 12)
    // All the mass in one of two bins: F is 1 over the second, which adds nothing.
    expect(noDriftWasserstein([0, 1, 2], [5, 0]).mean).toBeCloseTo(Math.sqrt(2 * Math.PI) / 8, 12)
    expect(noDriftWasserstein([0, 1], [0])).toEqual({ mean: 0, sd: 0 })
    expect(() => noDriftWasserstein([0, 1], [1, 1])).toThrow(RangeError)
  })

  it('matches the spread of √(nm/(n + m))·W1 between undrifted uniform samples (simulated, seed 41)', () => {
    const random = createRandom(41)
    const n = 1000
    const m = 4000
    const draw = (k: number) => Float64Array.from({ length: k }, () => random.next()).sort()
    const scaled: number[] = []
    for (let rep = 0; rep < 400; rep++) {
      const x = draw(n)
      const y = draw(m)
      // ∫ |F_n − G_m| over the merged jump points.
      let i = 0
      let j = 0
      let at = 0
      let w1 = 0
      while (i < n || j < m) {
        const next = j >= m || (i < n && x[i] <= y[j]) ? x[i] : y[j]
        w1 += Math.abs(i / n - j / m) * (next - at)
        at = next
        if (j >= m || (i < n && x[i] <= y[j])) i++
        else j++
      }
      scaled.push(Math.sqrt((n * m) / (n + m)) * w1)
    }
    const mean = scaled.reduce((a, b) => a + b, 0) / scaled.length
    const sd = Math.sqrt(scaled.reduce((a, b) => a + (b - mean) ** 2, 0) / (scaled.length - 1))
    const spread = noDriftWasserstein(Array.from({ length: 11 }, (_, k) => k / 10), new Array<number>(10).fill(100))
    expect(Math.abs(spread.mean / mean - 1)).toBeLessThan(0.05)
    expect(Math.abs(spread.sd / sd - 1)).toBeLessThan(0.15)
    // Borell-TIS: L's sd is at most the distribution's, √(1/12).
    expect(spread.sd).toBeLessThan(Math.sqrt(1 / 12))
  })

  it('puts the level at the scaled χ² quantile: mean 2, sd 2 is 1·χ²₂, whose upper p-quantile is −2 ln p', () => {
    // n = m = 2: √(1/2 + 1/2) = 1.
    expect(noDriftWassersteinLevel({ mean: 2, sd: 2 }, 2, 2, Math.exp(-3))).toBeCloseTo(6, 10)
    expect(noDriftWassersteinLevel({ mean: 2, sd: 2 }, 8, 8, Math.exp(-3))).toBeCloseTo(3, 10)
    expect(noDriftWassersteinLevel({ mean: 2, sd: 0 }, 2, 2, 0.01)).toBe(2)
    expect(noDriftWassersteinLevel({ mean: 2, sd: 2 }, 0, 2, 0.01)).toBe(Number.POSITIVE_INFINITY)
  })
})
