import { describe, expect, it } from 'vitest'
import { controllerConfig, controllerConfigFrom } from '../../../edge/rollout/controller-config.ts'

describe('controller config', () => {
  it('has the documented defaults', () => {
    expect(controllerConfig()).toEqual({
      steps: [1, 5, 20, 50, 100],
      dwellMinutes: 10,
      minRows: 1_000,
      minRequests: 200,
      errorRateMargin: 0.02,
      psiWarning: 0.1,
      psiCritical: 0.2,
      criticalWindows: 3,
      cleanWindows: 3,
      p95Ratio: 1.5,
      p95SlackMs: 5,
      maxWindowMinutes: 60,
      minLabels: 200,
      labelMaxDelayMinutes: 60,
      qualityMetric: 'accuracy',
      qualityMargin: 0.05,
    })
  })

  it('reads CONTROLLER_* vars, unset or empty ones keeping the default', () => {
    const config = controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_STEPS: ' 2, 10 ,100', CONTROLLER_DWELL_MINUTES: '1', CONTROLLER_ERROR_RATE_MARGIN: '0.05', CONTROLLER_PSI_WARNING: '' })
    expect(config).toMatchObject({ steps: [2, 10, 100], dwellMinutes: 1, errorRateMargin: 0.05, psiWarning: 0.1, minRows: 1_000 })
  })

  it('refuses a bad value, naming the var', () => {
    expect(() => controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_MIN_ROWS: 'lots' })).toThrow(/CONTROLLER_MIN_ROWS/)
    expect(() => controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_STEPS: '1,5,50' })).toThrow(/CONTROLLER_STEPS: the last step must be 100/)
    expect(() => controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_STEPS: '5,1,100' })).toThrow(/CONTROLLER_STEPS: steps must increase/)
    expect(controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_QUALITY_METRIC: 'roc_auc', CONTROLLER_MIN_LABELS: '50' })).toMatchObject({ qualityMetric: 'roc_auc', minLabels: 50 })
    expect(() => controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_QUALITY_METRIC: 'f1' })).toThrow(/CONTROLLER_QUALITY_METRIC/)
    expect(() => controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_PSI_CRITICAL: '0.05' })).toThrow(/CONTROLLER_PSI_CRITICAL: must be at least the warning threshold/)
  })
  it('bounds CONTROLLER_MAX_WINDOW_MINUTES at the 180 minutes the backend reports on', () => {
    expect(controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_MAX_WINDOW_MINUTES: '180' }).maxWindowMinutes).toBe(180)
    expect(() => controllerConfigFrom({ BACKEND_URL: 'x', CONTROLLER_MAX_WINDOW_MINUTES: '181' })).toThrow(/CONTROLLER_MAX_WINDOW_MINUTES: the backend reports windows of at most 180 minutes/)
    expect(() => controllerConfig({ maxWindowMinutes: 240 })).toThrow(/at most 180 minutes/)
  })
})
