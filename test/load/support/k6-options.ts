/**
 * What k6 would refuse in a script's `options`, checked without k6: threshold names (a built-in
 * metric, or one the script declared, with optional `{tag:value}` filters), threshold
 * expressions in k6's grammar with an aggregation the metric's type has, and arrival-rate
 * executors with the fields they require. Answers one line per problem; empty when k6 accepts.
 */

type MetricType = 'counter' | 'trend' | 'rate' | 'gauge'

const BUILT_IN: Record<string, MetricType> = {
  http_req_duration: 'trend', http_req_blocked: 'trend', http_req_connecting: 'trend', http_req_tls_handshaking: 'trend',
  http_req_sending: 'trend', http_req_waiting: 'trend', http_req_receiving: 'trend', iteration_duration: 'trend', group_duration: 'trend',
  http_req_failed: 'rate', checks: 'rate',
  http_reqs: 'counter', iterations: 'counter', data_sent: 'counter', data_received: 'counter', dropped_iterations: 'counter',
  vus: 'gauge', vus_max: 'gauge',
}

/** k6's aggregation methods per metric type (k6 docs, "Thresholds"). */
const AGGREGATIONS: Record<MetricType, RegExp> = {
  counter: /^(count|rate)$/,
  gauge: /^value$/,
  rate: /^rate$/,
  trend: /^(avg|min|max|med|p\((\d+(\.\d+)?)\))$/,
}

const THRESHOLD_NAME = /^([A-Za-z_][A-Za-z0-9_]*)(\{([A-Za-z_][A-Za-z0-9_]*:[^,{}]+)(,[A-Za-z_][A-Za-z0-9_]*:[^,{}]+)*\})?$/
const EXPRESSION = /^\s*([a-z]+(\([0-9.]+\))?)\s*(<=|>=|===|==|!=|<|>)\s*(-?[0-9]+(\.[0-9]+)?)\s*$/
const DURATION = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/

const EXECUTOR_FIELDS: Record<string, string[]> = {
  'constant-arrival-rate': ['rate', 'timeUnit', 'duration', 'preAllocatedVUs'],
  'ramping-arrival-rate': ['stages', 'preAllocatedVUs'],
}

export const k6OptionProblems = (options: Record<string, unknown>, declared: ReadonlyMap<string, MetricType>): string[] => {
  const problems: string[] = []
  const thresholds = (options.thresholds ?? {}) as Record<string, unknown>
  for (const [name, expressions] of Object.entries(thresholds)) {
    const match = THRESHOLD_NAME.exec(name)
    const type = match ? (BUILT_IN[match[1]] ?? declared.get(match[1])) : undefined
    if (!match) problems.push(`threshold name ${JSON.stringify(name)} is not metric{tag:value}`)
    else if (!type) problems.push(`threshold on ${match[1]}: no such metric`)
    if (!Array.isArray(expressions) || expressions.length === 0) {
      problems.push(`threshold ${name}: expected a non-empty array of expressions`)
      continue
    }
    for (const expression of expressions) {
      const parsed = typeof expression === 'string' ? EXPRESSION.exec(expression) : null
      if (!parsed) problems.push(`threshold ${name}: ${JSON.stringify(expression)} is not "aggregation operator number"`)
      else if (type && !AGGREGATIONS[type].test(parsed[1])) problems.push(`threshold ${name}: ${parsed[1]} is not an aggregation of a ${type}`)
    }
  }
  const scenarios = (options.scenarios ?? {}) as Record<string, Record<string, unknown>>
  if (Object.keys(scenarios).length === 0) problems.push('no scenarios')
  for (const [name, scenario] of Object.entries(scenarios)) {
    const required = EXECUTOR_FIELDS[String(scenario.executor)]
    if (!required) {
      problems.push(`scenario ${name}: executor ${JSON.stringify(scenario.executor)} is not an arrival-rate executor`)
      continue
    }
    for (const field of required) if (scenario[field] === undefined) problems.push(`scenario ${name}: ${String(scenario.executor)} needs ${field}`)
    for (const field of ['duration', 'timeUnit']) {
      if (scenario[field] !== undefined && !DURATION.test(String(scenario[field]))) problems.push(`scenario ${name}: ${field} ${JSON.stringify(scenario[field])} is not a k6 duration`)
    }
    for (const field of ['rate', 'startRate', 'preAllocatedVUs', 'maxVUs']) {
      const value = scenario[field]
      if (value !== undefined && !(Number.isInteger(value) && (value as number) >= 0)) problems.push(`scenario ${name}: ${field} must be a whole number, got ${JSON.stringify(value)}`)
    }
    const stages = scenario.stages as Array<{ target: unknown; duration: unknown }> | undefined
    for (const [i, stage] of (stages ?? []).entries()) {
      if (!Number.isInteger(stage.target)) problems.push(`scenario ${name}: stages[${i}].target must be a whole number`)
      if (!DURATION.test(String(stage.duration))) problems.push(`scenario ${name}: stages[${i}].duration ${JSON.stringify(stage.duration)} is not a k6 duration`)
    }
  }
  return problems
}
