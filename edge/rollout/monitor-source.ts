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
  /** Realized quality of the labels feedback brought in the window; absent where nothing counts them. */
  realized?: QualityFigures
}

/** Where the controller reads each arm's numbers from (the backend's drift and stats endpoints in production). */
export interface MonitorSource {
  arm(model: string, version: number, windowMinutes: number): Promise<ArmWindow>
}
