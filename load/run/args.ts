import { parseArgs } from 'node:util'
import { SCENARIOS, SCENARIO_NAMES, scaled } from '../scenarios/index.js'
import type { Scenario, Sla } from '../scenarios/shapes.js'

/** A command-line mistake: the command prints it with its usage and exits 2. */
export class UsageError extends Error {}

/** A positive number from option `name`, or undefined when the option was not given. */
export const positiveNumber = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined
  const value = Number(text)
  if (text.trim() === '' || !Number.isFinite(value) || value <= 0) throw new UsageError(`--${name} must be a positive number, got ${JSON.stringify(text)}`)
  return value
}

/** A target base URL: http(s), no trailing slash. */
export const targetUrl = (text: string): string => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new UsageError(`--target must be a URL, got ${JSON.stringify(text)}`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--target must be http(s), got ${JSON.stringify(text)}`)
  return url.href.replace(/\/+$/, '')
}

/** Where to send the load: a given target with its key, or (neither given) a local stack started for the run. */
export type Target = { kind: 'remote'; url: string; apiKey: string } | { kind: 'local' }

export const parseTarget = (target: string | undefined, key: string | undefined): Target => {
  if (target === undefined) {
    if (key !== undefined) throw new UsageError('--key needs --target: the local stack makes its own key')
    return { kind: 'local' }
  }
  const apiKey = key ?? process.env.API_KEY
  if (!apiKey) throw new UsageError('--target needs --key (or API_KEY in the environment)')
  return { kind: 'remote', url: targetUrl(target), apiKey }
}

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
