import { SCENARIOS, SCENARIO_NAMES, scaled } from '../scenarios/index.js'
import type { Scenario, Sla } from '../scenarios/shapes.js'
import { UsageError, parseTarget, positiveNumber, type Target } from '../harness/args.ts'

export interface LoadArgs {
  target: Target
  scenario: Scenario
  model: string
  connections: number
  seed: number
  knownIds: string[] | undefined
}

/** The flags as the command line gives them (camel-cased by commander), before they are checked. */
export interface LoadFlags {
  target?: string
  key?: string
  scenario?: string
  duration?: string
  rate?: string
  connections?: string
  model?: string
  seed?: string
  knownIds?: string
  slaP95?: string
  slaP99?: string
  maxErrorRate?: string
}

/** Checks `edge-infer load`'s flags; throws UsageError on anything it cannot use. */
export const loadArgs = (values: LoadFlags): LoadArgs => {
  const scenarioName = values.scenario ?? 'steady'
  const base = SCENARIOS[scenarioName]
  if (base === undefined) throw new UsageError(`--scenario must be one of ${SCENARIO_NAMES.join(', ')}, got ${JSON.stringify(scenarioName)}`)
  const durationS = positiveNumber('duration', values.duration)
  const peakRate = positiveNumber('rate', values.rate)
  const sla: Sla = {
    p95Ms: positiveNumber('sla-p95', values.slaP95) ?? base.sla.p95Ms,
    p99Ms: positiveNumber('sla-p99', values.slaP99) ?? base.sla.p99Ms,
    maxErrorRate: positiveNumber('max-error-rate', values.maxErrorRate) ?? base.sla.maxErrorRate,
  }
  const connections = positiveNumber('connections', values.connections) ?? 16
  if (!Number.isInteger(connections)) throw new UsageError(`--connections must be a whole number, got ${values.connections}`)
  return {
    target: parseTarget(values.target, values.key),
    scenario: { ...scaled(base, { durationS, peakRate }), sla },
    model: values.model ?? 'credit-risk',
    connections,
    seed: positiveNumber('seed', values.seed) ?? 1,
    knownIds: values.knownIds?.split(',').filter(Boolean),
  }
}
