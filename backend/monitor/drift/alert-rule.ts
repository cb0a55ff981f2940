import type { Verdict } from '../../../shared/drift/report.ts'

export interface AlertState {
  alerting: boolean
  /** Critical windows in a row. */
  critical: number
  /** Windows in a row that were not critical (ok or warning). */
  clean: number
}

/** Windows in a row it takes to raise an alert, and to clear it. */
export const ALERT_AFTER = 3
export const CLEAR_AFTER = 3

/**
 * Hysteresis over consecutive windows: one noisy window neither raises nor clears an alert.
 * A window without enough rows says nothing, so it leaves the state as it was.
 */
export const alertRule = {
  initial: { alerting: false, critical: 0, clean: 0 } as AlertState,
  next(state: AlertState, verdict: Verdict): AlertState {
    if (verdict === 'insufficient') return state
    if (verdict === 'critical') {
      const critical = state.critical + 1
      return { alerting: state.alerting || critical >= ALERT_AFTER, critical, clean: 0 }
    }
    const clean = state.clean + 1
    return { alerting: state.alerting && clean < CLEAR_AFTER, critical: 0, clean }
  },
}
