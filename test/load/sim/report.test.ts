import { describe, expect, it } from 'vitest'
import { tracesTable, verdicts } from '../../../load/sim/report.ts'
import type { SettingOutcome, TraceComparison } from '../../../load/sim/scenarios.ts'
import { readScaledObject } from '../../../load/sim/scaler-config.ts'

const config = readScaledObject()

/** An outcome with only what the verdict reads: minutes violating, refusals and replica-hours. */
const outcome = (name: string, replicas: number, hours: number, violated = 0, rejected = 0): SettingOutcome => ({
  setting: { name, config: { ...config, minReplicas: replicas, maxReplicas: replicas }, startDelayS: 60 },
  result: { buckets: Array.from({ length: hours * 60 }, () => ({ startS: 0, arrivals: 0, rejected: 0, readyReplicas: replicas, replicas, meanDepth: 0, maxDepth: 0, p95S: 0, slaViolated: false })), arrivals: 0, served: 0, rejected, meanWaitS: 0, meanLatencyS: 0, p50S: 0, p95S: 0, p99S: 0, replicaSeconds: replicas * hours * 3600, maxReplicas: replicas, meanBatchRows: 1 },
  violatedShare: violated / (hours * 60),
})

const trace = (name: string, autoscaled: SettingOutcome, fixed: SettingOutcome[], mustBeat = true): TraceComparison => ({ name, autoscaled: [autoscaled], fixed, mustBeat })

describe('the verdict of the traces side by side', () => {
  it('asks for fewer replica-hours than the smallest fixed count where the trace has a shape, and only the SLA on the flat peak hour', () => {
    const traces = [
      trace('committed trace', outcome('committed', 2.5, 2), [outcome('fixed 3', 3, 2)]),
      trace('held-out trace', outcome('committed', 2.2, 2), [outcome('fixed 3', 3, 2)]),
      trace('peak hour', outcome('committed', 4, 1), [outcome('fixed 3', 3, 1)], false),
    ]
    expect(verdicts(traces)).toEqual(['committed: beats the smallest fixed count on committed trace and held-out trace; meets the SLA on peak hour'])
    expect(tracesTable(traces)).toContain('| smallest fixed count meeting the SLA | 3 replicas: 0 / 0 / 6.00 | 3 replicas: 0 / 0 / 6.00 | 3 replicas: 0 / 0 / 3.00 |')
  })

  it('names the traces where it loses: more hours, a violating minute, a refusal, or a fixed count that never met the SLA', () => {
    const traces = [
      trace('committed trace', outcome('committed', 3, 2), [outcome('fixed 3', 3, 2)]),
      trace('held-out trace', outcome('committed', 2, 2, 0, 5), [outcome('fixed 3', 3, 2)]),
      trace('peak hour', outcome('committed', 4, 1, 1), [outcome('fixed 3', 3, 1)], false),
    ]
    expect(verdicts(traces)).toEqual(['committed: does not beat the smallest fixed count on committed trace and held-out trace; misses the SLA on peak hour'])
    const unmet = [trace('committed trace', outcome('committed', 2, 2), [outcome('fixed 3', 3, 2, 2)])]
    expect(verdicts(unmet)).toEqual(['committed: does not beat the smallest fixed count on committed trace'])
  })
})
