import { describe, expect, it } from 'vitest'
import { estimatedQuality } from '../../../../backend/monitor/drift/report.ts'
import type { ReportBaseline } from '../../../../backend/monitor/drift/report-baseline.ts'
import { effectLevels, psiLevels } from './psi-levels.ts'

/** One edge at 0.5; the reference's calibration: 20% positives below it at mean score 0.2, 80% above at 0.8. */
const prediction: ReportBaseline['prediction'] = {
  edges: [0.5],
  counts: [700, 300],
  class_counts: { no: 700, yes: 300 },
  thresholds: psiLevels(0.1, 0.2),
  effect_size: { mean: 0, sd: 1, thresholds: effectLevels },
  calibration: { positives: [140, 240], mean_probability: [0.2, 0.8] },
}

describe('estimatedQuality with a config threshold that is not a prediction bin edge', () => {
  it('keeps every figure the threshold does not decide and leaves accuracy unknown, instead of failing the drift report', () => {
    // 700 rows below (140 positive), 300 above (240 positive): AUC = (140·280 + 240·590) / (380·620),
    // log loss = (200·−ln 0.2 + 800·−ln 0.8) / 1000, calibration exact so ECE 0.
    const figures = estimatedQuality(prediction, 0.42, [700, 300])
    expect(figures.labels).toBe(1000)
    expect(figures.accuracy).toBeNull()
    expect(figures.roc_auc).toBeCloseTo(180_800 / 235_600, 12)
    expect(figures.log_loss).toBeCloseTo((200 * -Math.log(0.2) + 800 * -Math.log(0.8)) / 1000, 12)
    expect(figures.ece).toBeCloseTo(0, 12)
  })

  it('classifies by a threshold on the edge as before: (560 + 240) / 1000 correct', () => {
    expect(estimatedQuality(prediction, 0.5, [700, 300]).accuracy).toBeCloseTo(0.8, 12)
  })
})
