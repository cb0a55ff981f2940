import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createLogger } from '../../../../backend/logger.ts'
import { BASELINE_FILE, readBaseline } from '../../../../backend/monitor/drift/baseline-file.ts'
import type { DriftCounter } from '../../../../backend/monitor/drift/counter.ts'
import { driftLayout } from '../../../../backend/monitor/drift/layout.ts'
import { minuteOf } from '../../../../shared/drift/report.ts'
import { DriftMonitor } from '../../../../backend/monitor/drift/monitor.ts'
import { readReportBaseline, type ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { driftReport } from '../../../../backend/monitor/drift/report.ts'
import { createRandom } from '../../../../tools/training/random.ts'
import { DEMO_REPOSITORY } from '../../support/fixture-repository.ts'
import { baseline as bins, config, request, row } from './fixture.ts'
import { effectLevels, psiLevels } from './psi-levels.ts'

/**
 * The effect size end to end: rows counted by the real counter on the toy model (score, color,
 * flag), reported against a baseline whose score is N(5, 1) over `REFERENCE` rows and whose
 * logit is N(0, 1.5). The fixture's score bins all sit below 2.2, so PSI cannot see a shift
 * around 5: every verdict on score here is the effect size's.
 */

const REFERENCE = 1_000_000
const NOW = Date.UTC(2030, 0, 1, 12, 0, 10)

const baseline: ReportBaseline = {
  format: 3,
  model: 'toy',
  version: 1,
  rows: REFERENCE,
  features: [
    {
      name: 'score', kind: 'numeric', edges: [0.35, 1.1, 2.2], counts: [0, 0, 0, REFERENCE],
      min: 0.1, max: 9.9, missing: 0, missing_rate: 0, thresholds: psiLevels(0.1, 0.2), effect_size: { mean: 5, sd: 1, thresholds: effectLevels },
    },
    { name: 'color', kind: 'categorical', categories: ['blue', 'red'], counts: { blue: REFERENCE / 2, red: REFERENCE / 2, __other__: 0, __unseen__: 0 }, missing: 0, missing_rate: 0, thresholds: psiLevels(0.1, 0.2) },
    { name: 'flag', kind: 'categorical', categories: ['false', 'true'], counts: { false: REFERENCE / 2, true: REFERENCE / 2, __other__: 0, __unseen__: 0 }, missing: 0, missing_rate: 0, thresholds: psiLevels(0.1, 0.2) },
  ],
  prediction: {
    edges: [0.25, 0.5, 0.75],
    // N(0, 1.5)'s shares between the edges' logits ±ln 3: Φ(−ln 3 / 1.5) = 0.23196 (scipy.stats.norm.cdf), so the
    // reference bins agree with the reference logit and an undrifted window leaves the shape gate shut.
    counts: [231_960, 268_040, 268_040, 231_960],
    class_counts: { no: REFERENCE / 2, yes: REFERENCE / 2 },
    thresholds: psiLevels(0.1, 0.2),
    effect_size: { mean: 0, sd: 1.5, thresholds: effectLevels },
    calibration: { positives: [REFERENCE / 40, REFERENCE / 10, REFERENCE / 6, REFERENCE / 5], mean_probability: [0.15, 0.4, 0.6, 0.85] },
  },
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x))

const newCounter = (): DriftCounter => new DriftMonitor({ logger: createLogger('silent'), now: () => NOW }).counter(driftLayout('toy', 1, config, bins))

/** Counts `n` rows: score N(5 + shift, 1), colors blue and red alike, logit N(logitShift, 1.5). */
const count = (counter: DriftCounter, n: number, seed: number, shift = 0, logitShift = 0): void => {
  const random = createRandom(seed)
  for (let done = 0; done < n; done += 1000) {
    const rows = Array.from({ length: Math.min(1000, n - done) }, (_, i) => row(random.normal(5 + shift, 1), i % 2 === 0 ? 0 : 2, i % 2))
    counter.record(...recorded(rows, rows.map(() => sigmoid(random.normal(logitShift, 1.5)))))
  }
}

const recorded = (rows: number[][], positives: number[]) => {
  const { inputs, outputs } = request(rows, positives)
  return [inputs, rows.length, outputs] as const
}

const reportOf = async (counter: DriftCounter) => driftReport(baseline, new Set(), [await counter.window(1, NOW)], 0.5)

describe('effect size', () => {
  it('measures a known 0.3 sd shift within its standard error, √(1/N + 1/n) in reference sd, and calls it critical', async () => {
    const counter = newCounter()
    count(counter, 4000, 11, 0.3)
    const { features } = await reportOf(counter)
    const score = features[0].effect_size!
    expect(score.se).toBeCloseTo(Math.sqrt(1 / REFERENCE + 1 / 4000), 3)
    expect(Math.abs(score.smd! - 0.3)).toBeLessThan(3 * score.se!)
    expect(score.mean.observed).toBeCloseTo(5.3, 1)
    expect(score.sd.observed).toBeCloseTo(1, 1)
    expect(score.verdict).toBe('critical')
    expect(features[0].verdict).toBe('critical')
    // PSI saw next to nothing: all but a few rows are in the bin above 2.2, as in the reference.
    expect(features[0].psi).toBeLessThan(features[0].thresholds.warning)
    expect(features[0].windows[0]).toMatchObject({ smd: score.smd, z: score.z, verdict: 'critical' })
  })

  it('calls a downward 0.3 sd shift critical as well: |SMD| and |z| are what count', async () => {
    const counter = newCounter()
    count(counter, 4000, 15, -0.3)
    const { features } = await reportOf(counter)
    const score = features[0].effect_size!
    expect(Math.abs(score.smd! + 0.3)).toBeLessThan(3 * score.se!)
    expect(score.z!).toBeLessThan(-effectLevels.z_critical)
    expect(score.verdict).toBe('critical')
    expect(features[0].verdict).toBe('critical')
  })

  it('gives SMD, its standard error, z and Wasserstein-1 as figured by hand, against a reference with sd 2', async () => {
    // Reference: 10,000 present scores, mean 6, sd 2, all in the top bin [2.2, 9.9]. Window: 1,000
    // rows at 1.325 (FP32, and on the sums' grid to within it), in [1.1, 2.2).
    const reference = 10_000
    const [score, ...others] = baseline.features
    const shifted: ReportBaseline = {
      ...baseline,
      features: [{ ...score!, counts: [0, 0, 0, reference], effect_size: { mean: 6, sd: 2, thresholds: effectLevels } } as ReportBaseline['features'][number], ...others],
    }
    const counter = newCounter()
    counter.record(...recorded(Array.from({ length: 1000 }, (_, i) => row(1.325, 0, i % 2)), new Array(1000).fill(0.5)))
    const effect = (await driftReport(shifted, new Set(), [await counter.window(1, NOW)], 0.5)).features[0].effect_size!
    expect(effect.mean.observed).toBeCloseTo(1.325, 6)
    expect(effect.sd.observed).toBeCloseTo(0, 6)
    // smd = (1.325 − 6) / 2; se = √(2²/10,000 + 0²/1,000) / 2 = 0.01; z = smd / se.
    expect(effect.smd).toBeCloseTo(-2.3375, 6)
    expect(effect.se).toBeCloseTo(0.01, 9)
    expect(effect.z).toBeCloseTo(-233.75, 4)
    // Uniform on [1.1, 2.2] against uniform on [2.2, 9.9]: W1 = 6.05 − 1.65 = 4.4, over the reference sd 2.
    expect(effect.wasserstein).toBeCloseTo(2.2, 12)
    expect(effect.verdict).toBe('critical')
  })

  it('leaves a clean window ok, its z inside the warning level', async () => {
    const counter = newCounter()
    count(counter, 4000, 12)
    const report = await reportOf(counter)
    const score = report.features[0].effect_size!
    expect(Math.abs(score.z!)).toBeLessThan(3)
    expect(score.verdict).toBe('ok')
    expect(report.features[0].verdict).toBe('ok')
    expect(report.prediction.effect_size!.verdict).toBe('ok')
    expect(report.prediction.verdict).toBe('ok')
  })

  it('does not alert on a trivial shift that a large window proves beyond doubt: |SMD| < min_effect', async () => {
    const counter = newCounter()
    count(counter, 200_000, 13, 0.05)
    const score = (await reportOf(counter)).features[0].effect_size!
    expect(Math.abs(score.z!)).toBeGreaterThan(effectLevels.z_critical)
    expect(Math.abs(score.smd!)).toBeLessThan(effectLevels.min_effect)
    expect(score.verdict).toBe('ok')
  })

  it('sees a +0.5 logit shift of the predictions as a shift of the logit mean by 0.5 / 1.5 sd', async () => {
    const counter = newCounter()
    count(counter, 4000, 14, 0, 0.5)
    const { prediction } = await reportOf(counter)
    const effect = prediction.effect_size!
    expect(Math.abs(effect.smd! - 0.5 / 1.5)).toBeLessThan(3 * effect.se!)
    expect(effect.verdict).toBe('critical')
    expect(prediction.verdict).toBe('critical')
    // Four bins over the logit: the shift moves mass up, so Wasserstein-1 is well away from 0.
    expect(effect.wasserstein!).toBeGreaterThan(0.1)
  })

  it('says nothing, rather than NaN, for a window without present values, and insufficient below 1,000 rows', async () => {
    const counter = newCounter()
    counter.record(...recorded(Array.from({ length: 10 }, () => row(Number.NaN, 0, 0)), new Array(10).fill(0.5)))
    const score = (await reportOf(counter)).features[0].effect_size!
    expect(score).toMatchObject({ smd: null, se: null, z: null, wasserstein: null, mean: { reference: 5, observed: null }, verdict: 'insufficient' })
  })
})

describe('effect-size sums across replicas', () => {
  it('merge by adding: two counters\' flat minute arrays add up, index for index, to one counter that saw every row', async () => {
    const [a, b, both] = [newCounter(), newCounter(), newCounter()]
    count(a, 3000, 21, 0.2, 0.3)
    count(b, 2000, 22, -0.1, -0.2)
    count(both, 3000, 21, 0.2, 0.3)
    count(both, 2000, 22, -0.1, -0.2)
    const flat = (c: DriftCounter) => {
      const total = new Float64Array(c.layout.size)
      c.buckets.addTo(total, minuteOf(NOW), minuteOf(NOW), false)
      return total
    }
    const [fa, fb, fboth] = [flat(a), flat(b), flat(both)]
    expect(Array.from(fa, (x, i) => x + fb[i])).toEqual(Array.from(fboth))
    // Whole grid steps, so Redis's HINCRBY takes them and the addition above is exact.
    const { features, prediction } = both.layout
    for (const at of [features[0].sums, features[0].sums + 1, prediction.sums, prediction.sums + 1]) {
      expect(Number.isSafeInteger(fboth[at]), `index ${at}`).toBe(true)
      expect(fboth[at]).toBeGreaterThan(0)
    }
  })
})

describe('baselines from before the effect sizes', () => {
  it('still count, but cannot back a report: the error says format 3 and what is missing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'drift-format-2-'))
    try {
      const current = JSON.parse(await readFile(join(DEMO_REPOSITORY, 'credit-risk', '2', BASELINE_FILE), 'utf8'))
      const old = { ...current, format: 2, features: current.features.map(({ effect_size: _, ...f }: { effect_size?: unknown }) => f) }
      delete old.prediction.effect_size
      delete old.prediction.calibration
      await writeFile(join(dir, BASELINE_FILE), JSON.stringify(old))
      await expect(readBaseline(dir)).resolves.toBeDefined()
      const refused = readReportBaseline(dir)
      await expect(refused).rejects.toThrow(/cannot back a drift report \(format 3 expected; rebuild the model's baseline\): format: .*features\.0\.effect_size: .*prediction\.effect_size: .*prediction\.calibration: /)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
