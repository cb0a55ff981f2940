import { describe, expect, it } from 'vitest'
import { HorizontalPodAutoscaler, recommendFromAverage, recommendFromMetrics, recommendFromPods, recommendFromTotal, scaleUpLimit } from '../../../load/sim/hpa.ts'
import type { Behavior, ScalingRules } from '../../../load/sim/scaler-config.ts'

/** The examples of kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale. */

const fastDown: ScalingRules = { stabilizationWindowSeconds: 300, selectPolicy: 'Max', policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }] }
const docsUp: ScalingRules = {
  stabilizationWindowSeconds: 0,
  selectPolicy: 'Max',
  policies: [{ type: 'Pods', value: 4, periodSeconds: 15 }, { type: 'Percent', value: 100, periodSeconds: 15 }],
}
const hpa = (behavior: Behavior, minReplicas = 1, maxReplicas = 100) => new HorizontalPodAutoscaler({ minReplicas, maxReplicas, behavior })

describe('several metrics', () => {
  // The docs' walkthrough ("Autoscaling on multiple metrics"): each metric proposes a count, the largest wins.
  it('takes the largest recommendation: CPU at 100 % of a 50 % target and 2.5k req/s per pod against 1k, at 3 pods', () => {
    const cpu = recommendFromAverage(3, 1.0, 0.5)
    const rps = recommendFromAverage(3, 2500, 1000)
    expect([cpu, rps]).toEqual([6, 8])
    expect(recommendFromMetrics(3, [cpu, rps])).toBe(8)
    expect(recommendFromMetrics(3, [rps, cpu])).toBe(8)
  })

  it('scales down only as far as the metric that asks for most', () => {
    expect(recommendFromMetrics(6, [recommendFromTotal(6, 6, 6), recommendFromTotal(6, 40_000, 10_000)])).toBe(4)
  })

  it('a metric it cannot read is left out of a scale-up, and stops a scale-down', () => {
    expect(recommendFromMetrics(3, [undefined, 8])).toBe(8)
    expect(recommendFromMetrics(6, [undefined, 2])).toBe(6)
    expect(recommendFromMetrics(6, [undefined, undefined])).toBe(6)
  })
})

describe('the metric recommendation', () => {
  it('doubles at 200m against a 100m target and halves at 50m', () => {
    expect(recommendFromAverage(3, 0.2, 0.1)).toBe(6)
    expect(recommendFromAverage(4, 0.05, 0.1)).toBe(2)
  })

  it('rounds up', () => {
    expect(recommendFromAverage(3, 0.15, 0.1)).toBe(5)
  })

  it('changes nothing while the ratio is within 0.9–1.1', () => {
    expect(recommendFromAverage(10, 109, 100)).toBe(10)
    expect(recommendFromAverage(10, 91, 100)).toBe(10)
    expect(recommendFromAverage(10, 112, 100)).toBe(12)
    expect(recommendFromAverage(10, 88, 100)).toBe(9)
  })

  it("KEDA's AverageValue trigger: ceil(sum / target), with the same tolerance", () => {
    expect(recommendFromTotal(2, 100, 12)).toBe(9)
    expect(recommendFromTotal(4, 50, 12)).toBe(4)
    expect(recommendFromTotal(4, 40, 12)).toBe(4)
    expect(recommendFromTotal(4, 30, 12)).toBe(3)
  })

  it('pods without a sample damp a scale-up (as 0) and a scale-down (as at target)', () => {
    expect(recommendFromPods(4, [24, 24], 0, 12)).toBe(4)
    // Two reporting at 2× target, two missing read as 0: average exactly the target, no change.
    expect(recommendFromPods(4, [24, 24], 2, 12)).toBe(4)
    expect(recommendFromPods(4, [36, 36], 2, 12)).toBe(6)
    // Two idle, two unknown read as at target: half the pods, not none.
    expect(recommendFromPods(4, [0, 0], 2, 12)).toBe(2)
  })
})

describe('scale-down stabilization', () => {
  it('uses the highest recommendation of the window', () => {
    const scaler = hpa({ scaleUp: docsUp, scaleDown: fastDown })
    expect(scaler.reconcile(0, 10, 10)).toBe(10)
    expect(scaler.reconcile(15, 10, 5)).toBe(10)
    expect(scaler.reconcile(30, 10, 4)).toBe(10)
    expect(scaler.reconcile(290, 10, 3)).toBe(10)
    // t=0's 10 has left the 300 s window: the highest left is t=15's 5.
    expect(scaler.reconcile(305, 10, 3)).toBe(5)
    expect(scaler.reconcile(320, 5, 3)).toBe(4)
  })

  it('scales up at once with a zero up-window', () => {
    const scaler = hpa({ scaleUp: docsUp, scaleDown: fastDown })
    expect(scaler.reconcile(0, 2, 2)).toBe(2)
    expect(scaler.reconcile(15, 2, 5)).toBe(5)
  })
})

describe('scale-up policies: Pods 4 and Percent 100 per 15 s', () => {
  it('selectPolicy Max allows the larger of +4 and ×2', () => {
    expect(scaleUpLimit(2, docsUp, [], [], 0)).toBe(6)
    expect(scaleUpLimit(10, docsUp, [], [], 0)).toBe(20)
  })

  it('selectPolicy Min allows the smaller', () => {
    expect(scaleUpLimit(2, { ...docsUp, selectPolicy: 'Min' }, [], [], 0)).toBe(4)
    expect(scaleUpLimit(10, { ...docsUp, selectPolicy: 'Min' }, [], [], 0)).toBe(14)
  })

  it('counts what the period already added, and lets it age out', () => {
    const scaler = hpa({ scaleUp: docsUp, scaleDown: fastDown })
    expect(scaler.reconcile(0, 2, 40)).toBe(6)
    expect(scaler.reconcile(10, 6, 40)).toBe(6)
    expect(scaler.reconcile(16, 6, 40)).toBe(12)
    expect(scaler.reconcile(32, 12, 40)).toBe(24)
  })

  it('never passes maxReplicas', () => {
    expect(hpa({ scaleUp: docsUp, scaleDown: fastDown }, 1, 10).reconcile(0, 8, 40)).toBe(10)
  })
})

describe('scale-down policy: Pods 1 per 60 s', () => {
  it('removes one pod a minute once the window agrees', () => {
    const oneAMinute: ScalingRules = { stabilizationWindowSeconds: 0, selectPolicy: 'Min', policies: [{ type: 'Pods', value: 1, periodSeconds: 60 }] }
    const scaler = hpa({ scaleUp: docsUp, scaleDown: oneAMinute }, 2)
    expect(scaler.reconcile(0, 8, 2)).toBe(7)
    expect(scaler.reconcile(30, 7, 2)).toBe(7)
    expect(scaler.reconcile(61, 7, 2)).toBe(6)
  })
})
