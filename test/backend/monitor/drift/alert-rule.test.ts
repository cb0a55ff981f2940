import { describe, expect, it } from 'vitest'
import { alertRule, type AlertState } from '../../../../backend/monitor/drift/alert-rule.ts'
import type { Verdict } from '../../../../shared/drift/report.ts'

const run = (verdicts: Verdict[]): AlertState => verdicts.reduce(alertRule.next, alertRule.initial)

describe('the 3-window alert rule', () => {
  it('raises an alert on the third critical window in a row, not before', () => {
    expect(run(['critical', 'critical']).alerting).toBe(false)
    expect(run(['critical', 'critical', 'critical'])).toEqual({ alerting: true, critical: 3, clean: 0 })
  })

  it('restarts the count after a window that is not critical', () => {
    expect(run(['critical', 'critical', 'warning', 'critical', 'critical']).alerting).toBe(false)
    expect(run(['critical', 'critical', 'ok', 'critical', 'critical', 'critical']).alerting).toBe(true)
  })

  it('clears only after three clean windows in a row', () => {
    const raised: Verdict[] = ['critical', 'critical', 'critical']
    expect(run([...raised, 'ok', 'ok']).alerting).toBe(true)
    expect(run([...raised, 'ok', 'ok', 'critical', 'ok', 'ok']).alerting).toBe(true)
    expect(run([...raised, 'ok', 'warning', 'ok']).alerting).toBe(false)
  })

  it('lets windows without enough rows pass without changing anything', () => {
    expect(run(['critical', 'insufficient', 'critical', 'insufficient', 'critical']).alerting).toBe(true)
    expect(run(['critical', 'critical', 'critical', 'ok', 'insufficient', 'ok', 'insufficient']).alerting).toBe(true)
  })
})
