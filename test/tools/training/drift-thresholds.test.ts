import { describe, expect, it } from 'vitest'
import { calibrateEffect, calibrateThresholds, heldOutWindows } from '../../../tools/training/drift-thresholds.ts'
import { createRandom } from '../../../tools/training/random.ts'
import { chiSquareQuantile, meanShift, psi } from '../../../shared/drift/statistics.ts'

const exactWindows = (shares: readonly number[], count = 40): number[][] =>
  Array.from({ length: count }, () => shares.map((s) => s * 1000))

describe('heldOutWindows', () => {
  it('cuts rows into windows of 1000 and drops a partial last one', () => {
    const windows = heldOutWindows(Array.from({ length: 40_999 }, (_, i) => i))
    expect(windows).toHaveLength(40)
    expect(windows.every((w) => w.length === 1000)).toBe(true)
    expect(windows[39][999]).toBe(39_999)
  })
  it('refuses fewer than 40 windows', () => {
    expect(() => heldOutWindows(new Array(39_999).fill(0))).toThrow(/39 windows of 1000; calibration needs 40/)
  })
})

describe('calibrateThresholds', () => {
  it('keeps the 0.1 / 0.2 floors when a large reference and quiet windows leave PSI well below them', () => {
    const t = calibrateThresholds([0, 4000, 4000, 4000, 4000], exactWindows([0, 0.25, 0.25, 0.25, 0.25]))
    expect(t).toMatchObject({ statistic: 'psi', window: 1000, warning: 0.1, critical: 0.2 })
    expect(t.no_drift).toMatchObject({ reference_bins: 4, held_out_windows: 40, held_out_mean: 0, held_out_sd: 0 })
    expect(t.no_drift.analytic_p99).toBeCloseTo((1 / 1000 + 1 / 16_000) * chiSquareQuantile(0.99, 3), 14)
    expect(t.no_drift.analytic_p999).toBeCloseTo((1 / 1000 + 1 / 16_000) * chiSquareQuantile(0.999, 3), 14)
  })

  it('raises both levels to the analytic bound when many bins and few reference rows make PSI noisy', () => {
    // 100 bins, 1,000 reference rows: (1/1000 + 1/1000)·χ²₀.₉₉(99) ≈ 0.27.
    const t = calibrateThresholds(new Array(100).fill(10), exactWindows(new Array(100).fill(1 / 100)))
    expect(t.warning).toBeCloseTo((2 / 1000) * chiSquareQuantile(0.99, 99), 14)
    expect(t.critical).toBeCloseTo((2 / 1000) * chiSquareQuantile(0.999, 99), 14)
    expect(t.warning).toBeGreaterThan(0.1)
    expect(t.critical).toBeGreaterThan(0.2)
  })

  it('raises both levels to the held-out mean + 3σ and + 5σ when the windows spread wider', () => {
    const reference = [8000, 8000]
    const windows = Array.from({ length: 40 }, (_, k) => [500 + 8 * k, 500 - 8 * k])
    const scores = windows.map((w) => psi(reference, w))
    const mean = scores.reduce((a, b) => a + b) / 40
    const sd = Math.sqrt(scores.reduce((a, s) => a + (s - mean) ** 2, 0) / 39)
    const t = calibrateThresholds(reference, windows)
    expect(t.no_drift.held_out_mean).toBeCloseTo(mean, 14)
    expect(t.no_drift.held_out_sd).toBeCloseTo(sd, 14)
    expect(t.warning).toBeCloseTo(mean + 3 * sd, 14)
    expect(t.critical).toBeCloseTo(mean + 5 * sd, 14)
    expect(t.warning).toBeGreaterThan(0.1)
  })

  it('puts the analytic warning level near the 99th percentile of PSI without drift', () => {
    // The premise of the bound: a reference of N rows and windows of n rows drawn from one
    // distribution give PSI ≈ (1/n + 1/N)·χ²(b − 1).
    const random = createRandom(7)
    const bins = Array.from({ length: 20 }, (_, i) => i)
    const weights = bins.map((i) => 1 + (i % 5))
    const draw = (rows: number): number[] => {
      const counts = new Array(20).fill(0)
      for (let r = 0; r < rows; r++) counts[random.choice(bins, weights)]++
      return counts
    }
    const reference = draw(16_000)
    const windows = Array.from({ length: 2000 }, () => draw(1000))
    const t = calibrateThresholds(reference, windows)
    const above = (level: number) => windows.filter((w) => psi(reference, w) > level).length / windows.length
    expect(above(t.no_drift.analytic_p99)).toBeGreaterThan(0.002)
    expect(above(t.no_drift.analytic_p99)).toBeLessThan(0.03)
    expect(above(t.no_drift.analytic_p999)).toBeLessThan(0.005)
    expect(t).toMatchObject({ warning: 0.1, critical: 0.2 })
  })
})

describe('calibrateEffect', () => {
  const reference = { n: 16_000, mean: 10, sd: 2 }

  it('keeps the floors (min |SMD| 0.1, |z| 3 / 4) when the held-out windows sit on the reference', () => {
    const t = calibrateEffect(reference, Array.from({ length: 40 }, () => ({ n: 1000, mean: 10, sd: 2 })))
    expect(t).toEqual({
      statistic: 'smd', window: 1000, min_effect: 0.1, z_warning: 3, z_critical: 4,
      no_drift: { held_out_windows: 40, z_mean: 0, z_sd: 0, max_abs_smd: 0 },
    })
  })

  it('raises the z levels to |mean| + 3 and + 4 held-out sd of z, and the minimum to the largest held-out |SMD|', () => {
    // Window means spread ±0.4 (0.2 reference sd) around 10.1: far wider than a 1,000-row SE says.
    const windows = Array.from({ length: 40 }, (_, k) => ({ n: 1000, mean: 10.1 + 0.4 * ((k % 5) - 2) / 2, sd: 2 }))
    const zs = windows.map((w) => meanShift(reference, w)!.z)
    const mean = zs.reduce((a, b) => a + b) / 40
    const sd = Math.sqrt(zs.reduce((a, z) => a + (z - mean) ** 2, 0) / 39)
    const t = calibrateEffect(reference, windows)
    expect(t.no_drift.z_mean).toBeCloseTo(mean, 12)
    expect(t.no_drift.z_sd).toBeCloseTo(sd, 12)
    expect(t.z_warning).toBeCloseTo(Math.abs(mean) + 3 * sd, 12)
    expect(t.z_critical).toBeCloseTo(Math.abs(mean) + 4 * sd, 12)
    expect(t.z_critical).toBeGreaterThan(4)
    // The widest window: mean 10.5, SMD 0.25.
    expect(t.min_effect).toBeCloseTo(0.25, 12)
  })
})
