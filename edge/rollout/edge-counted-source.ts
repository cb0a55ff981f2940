import { PREDICTION_EDGES, type QualityFigures, binnedQuality } from '../../shared/quality.ts'
import { minuteOf } from '../../shared/drift/report.ts'
import { MAX_QUALITY_WINDOW_MINUTES, type GroundTruthStore, type WindowCounts } from '../stores/ground-truth/ground-truth-store.ts'
import type { ArmWindow, MonitorSource } from './monitor-source.ts'

/** Realized quality of a window's labelled rows; none when the threshold is not a bin edge (binned accuracy cannot classify by it). */
export const realizedQuality = (counts: WindowCounts, threshold: number | undefined): QualityFigures | undefined => {
  try {
    return binnedQuality(PREDICTION_EDGES, threshold, counts.bins, {
      logLossSum: counts.logLossSum,
      meanProbability: counts.scoreSums.map((sum, i) => sum / counts.bins[i].rows),
    })
  } catch {
    return undefined
  }
}

export interface EdgeCountedOptions {
  /** The model's classification threshold (its postprocess's), if it has one. */
  threshold: (model: string) => Promise<number | undefined>
  /** Whether the model keeps its predictions for feedback (labels are expected); none: not said. */
  collectsLabels?: (model: string) => Promise<boolean>
  now?: () => number
}

/**
 * The backend's window of an arm with what only the edge counted: calls the backend never
 * answered (edge timeouts, open circuits) added to its requests and errors, and the realized
 * quality of the labels for the predictions the version served since the step began (`since`;
 * else in the window's minutes), counted by serving minute, so a label that arrives after the
 * step is still the step's.
 */
export const withEdgeCounts = (backend: MonitorSource, store: GroundTruthStore, { threshold, collectsLabels, now = Date.now }: EdgeCountedOptions): MonitorSource => ({
  async arm(model: string, version: number, windowMinutes: number, since?: number): Promise<ArmWindow> {
    const to = minuteOf(now())
    const from = to - windowMinutes + 1
    const labelsFrom = since === undefined ? from : Math.max(to - MAX_QUALITY_WINDOW_MINUTES + 1, Math.min(from, minuteOf(since)))
    const [arm, failures, labelled, cut, expected] = await Promise.all([
      backend.arm(model, version, windowMinutes, since),
      store.window(model, version, from, to),
      labelsFrom === from ? undefined : store.window(model, version, labelsFrom, to),
      threshold(model),
      collectsLabels?.(model),
    ])
    const realized = realizedQuality(labelled ?? failures, cut)
    return {
      ...arm,
      requests: arm.requests + failures.edgeFailures,
      errors: arm.errors + failures.edgeFailures,
      edge_failures: failures.edgeFailures,
      ...(realized ? { realized } : {}),
      ...(expected === undefined ? {} : { labels_expected: expected }),
    }
  },
})
