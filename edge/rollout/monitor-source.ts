import type { Verdict } from '../../shared/drift/report.ts'
import type { QualityFigures } from '../../shared/quality.ts'

/** One arm's traffic over a window, as the backend's monitor counted it. */
export interface ArmWindow {
  version: number
  /** Rows predicted (a request may carry many). */
  rows: number
  requests: number
  /** Requests that failed. */
  errors: number
  /** Outputs that were NaN or ±Infinity. */
  nan_outputs: number
  p95_ms: number
  /** Histogram of the top-class probability, in the same bins for every version of a model. */
  prediction_counts: number[]
  /** The backend's dataset verdict on the inputs this version saw. */
  input_drift: Verdict
  /** Of `requests` and `errors`: calls the edge counted failed without an answer from the backend. */
  edge_failures?: number
  /** Realized quality of the labels of the predictions served since the step began, whenever they came; absent where nothing counts them. */
  realized?: QualityFigures
  /** The model keeps its predictions for feedback, so labels for this window are still to come (the controller may wait for them). */
  labels_expected?: boolean
}

/** Where the controller reads each arm's numbers from (the backend's drift and stats endpoints in production). */
export interface MonitorSource {
  /** `since`: when the step began (epoch ms), for figures counted over the whole step rather than the window. */
  arm(model: string, version: number, windowMinutes: number, since?: number): Promise<ArmWindow>
}
