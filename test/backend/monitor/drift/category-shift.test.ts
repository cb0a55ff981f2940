import { describe, expect, it } from 'vitest'
import {
  CATEGORY_P_CRITICAL, CATEGORY_P_WARNING, MIN_TVD, categoryShift, categoryVerdictOf,
} from '../../../../backend/monitor/drift/report.ts'

/**
 * The categorical gate on a 4-cell table whose reference shares are 0.1 0.2 0.3 0.4 (10,000 rows).
 * χ² by hand per cell, (r·O − o·R)² / (R·O·(r + o)) with R = 10,000 and O the window's rows;
 * p-values from scipy.stats.chi2_contingency(..., correction=False).
 */

const REFERENCE = [1000, 2000, 3000, 4000]

const relative = (actual: number, expected: number) => expect(Math.abs(actual / expected - 1)).toBeLessThan(1e-9)

describe('categoryShift', () => {
  it('calls 10% of rows moved critical: TVD 0.1, χ² = 1000/12 + 1000/32 on 3 df', () => {
    // Cells 0 and 2: (10⁶ − 2·10⁶)² / (10⁷·1200) and (3·10⁶ − 2·10⁶)² / (10⁷·3200); cells 1 and 3 add 0.
    const shift = categoryShift(REFERENCE, [200, 200, 200, 400])
    expect(shift.tvd).toBeCloseTo(0.1, 12)
    relative(shift.p_value, 1.1318474275739195e-24)
    expect(shift.verdict).toBe('critical')
    expect(shift.thresholds).toEqual({ min_tvd: MIN_TVD, p_warning: CATEGORY_P_WARNING, p_critical: CATEGORY_P_CRITICAL })
  })

  it('calls a shift of 4.1% of rows whose p lies between the levels a warning: χ² ≈ 19.89', () => {
    // (10⁶ − 1.41·10⁶)² / (10⁷·1141) + (3·10⁶ − 2.59·10⁶)² / (10⁷·3259) = 14.733 + 5.158.
    const shift = categoryShift(REFERENCE, [141, 200, 259, 400])
    expect(shift.tvd).toBeCloseTo(0.041, 12)
    relative(shift.p_value, 0.00017882822084818)
    expect(shift.p_value).toBeGreaterThan(CATEGORY_P_CRITICAL)
    expect(shift.p_value).toBeLessThan(CATEGORY_P_WARNING)
    expect(shift.verdict).toBe('warning')
  })

  it('leaves a shift below the least effect ok however strong its evidence (100,000 rows, TVD 0.03)', () => {
    const shift = categoryShift(REFERENCE, [13_000, 20_000, 27_000, 40_000])
    expect(shift.tvd).toBeCloseTo(0.03, 12)
    relative(shift.p_value, 2.629149660754145e-20)
    expect(shift.verdict).toBe('ok')
  })

  it('says insufficient below 1,000 rows and ok on the reference\'s own shares', () => {
    expect(categoryShift(REFERENCE, [20, 20, 20, 40]).verdict).toBe('insufficient')
    expect(categoryShift(REFERENCE, [100, 200, 300, 400])).toMatchObject({ tvd: 0, verdict: 'ok' })
  })

  it('has the z gate\'s levels and the least effect of a 0.1 sd normal shift, 2Φ(0.05) − 1', () => {
    // scipy.stats.norm.sf(3) · 2, norm.sf(4) · 2, and 2·norm.cdf(0.05) − 1 = 0.03988.
    relative(CATEGORY_P_WARNING, 0.0026997960632601866)
    relative(CATEGORY_P_CRITICAL, 6.334248366623973e-5)
    expect(Math.abs(MIN_TVD - 0.03988)).toBeLessThan(0.0002)
    expect(categoryVerdictOf(1000, MIN_TVD, CATEGORY_P_CRITICAL)).toBe('critical')
    expect(categoryVerdictOf(1000, MIN_TVD, CATEGORY_P_WARNING)).toBe('warning')
    expect(categoryVerdictOf(1000, MIN_TVD - 1e-9, 0)).toBe('ok')
  })
})
