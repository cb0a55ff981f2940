import { parseArgs } from 'node:util'
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

export const LOAD_USAGE = `usage: npm run load -- [--target URL --key KEY] [--scenario NAME] [--duration S] [--rate R]
                       [--connections N] [--model NAME] [--seed N] [--known-ids a,b,c]
                       [--sla-p95 MS] [--sla-p99 MS] [--max-error-rate X]

  Plays a scenario with autocannon against the edge at --target (with the API key --key, or
  API_KEY), or without --target against a local stack (backend + edge in workerd) it starts and
  stops. Exits 1 when a threshold of the scenario's SLA is crossed, 2 on a usage error.

  --scenario     ${SCENARIO_NAMES.join(', ')} (default steady)
  --duration     seconds in all, the shape stretched to fit (default: the scenario's)
  --rate         peak requests per second (default: the scenario's)
  --connections  autocannon connections, at most (default 16)
  --known-ids    entity ids the target's feature store holds (default: the local seed's)
  --sla-*        override the scenario's thresholds`

/** Parses `npm run load` arguments; throws UsageError on anything it cannot use. */
export const parseLoadArgs = (argv: string[]): LoadArgs | 'help' => {
  let values
  try {
    ;({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        target: { type: 'string' }, key: { type: 'string' }, scenario: { type: 'string', default: 'steady' },
        duration: { type: 'string' }, rate: { type: 'string' }, connections: { type: 'string' }, model: { type: 'string', default: 'credit-risk' },
        seed: { type: 'string' }, 'known-ids': { type: 'string' },
        'sla-p95': { type: 'string' }, 'sla-p99': { type: 'string' }, 'max-error-rate': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }))
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err))
  }
  if (values.help) return 'help'
  const base = SCENARIOS[values.scenario]
  if (base === undefined) throw new UsageError(`--scenario must be one of ${SCENARIO_NAMES.join(', ')}, got ${JSON.stringify(values.scenario)}`)
  const durationS = positiveNumber('duration', values.duration)
  const peakRate = positiveNumber('rate', values.rate)
  const sla: Sla = {
    p95Ms: positiveNumber('sla-p95', values['sla-p95']) ?? base.sla.p95Ms,
    p99Ms: positiveNumber('sla-p99', values['sla-p99']) ?? base.sla.p99Ms,
    maxErrorRate: positiveNumber('max-error-rate', values['max-error-rate']) ?? base.sla.maxErrorRate,
  }
  const connections = positiveNumber('connections', values.connections) ?? 16
  if (!Number.isInteger(connections)) throw new UsageError(`--connections must be a whole number, got ${values.connections}`)
  return {
    target: parseTarget(values.target, values.key),
    scenario: { ...scaled(base, { durationS, peakRate }), sla },
    model: values.model,
    connections,
    seed: positiveNumber('seed', values.seed) ?? 1,
    knownIds: values['known-ids']?.split(',').filter(Boolean),
  }
}
