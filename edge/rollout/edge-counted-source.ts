import { PREDICTION_EDGES, type QualityFigures, binnedQuality } from '../../shared/quality.ts'
import { minuteOf } from '../../shared/drift/report.ts'
import type { GroundTruthStore, WindowCounts } from '../stores/ground-truth/ground-truth-store.ts'
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
  now?: () => number
}

/**
 * The backend's window of an arm with what only the edge counted: calls the backend never
 * answered (edge timeouts, open circuits) added to its requests and errors, and the realized
 * quality of the labels feedback brought for the version in the same minutes.
 */
export const withEdgeCounts = (backend: MonitorSource, store: GroundTruthStore, { threshold, now = Date.now }: EdgeCountedOptions): MonitorSource => ({
  async arm(model: string, version: number, windowMinutes: number): Promise<ArmWindow> {
    const to = minuteOf(now())
    const [arm, counts, cut] = await Promise.all([backend.arm(model, version, windowMinutes), store.window(model, version, to - windowMinutes + 1, to), threshold(model)])
    const realized = realizedQuality(counts, cut)
    return {
      ...arm,
      requests: arm.requests + counts.edgeFailures,
      errors: arm.errors + counts.edgeFailures,
      edge_failures: counts.edgeFailures,
      ...(realized ? { realized } : {}),
    }
  },
})
