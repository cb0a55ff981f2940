/**
 * The traffic shapes every runner plays — the k6 scripts, `npm run load` — each with the SLA
 * it is judged against. Rates are fractions of the scenario's peak, so one shape scales to any
 * target (`--rate`, `-e RATE`) and any length (`--duration`, `-e DURATION`).
 * Plain ESM without Node APIs: k6 imports it by relative path.
 */

/**
 * A stretch of the run whose arrival rate goes linearly from `from` to `to` (fractions of the
 * peak rate).
 * @typedef {object} Stage
 * @property {number} durationS
 * @property {number} from
 * @property {number} to
 */

/**
 * What a run must hold to pass: latency percentiles of the accepted requests and the share of
 * requests that failed (refusals the scenario asked for are not failures).
 * @typedef {object} Sla
 * @property {number} p95Ms
 * @property {number} p99Ms
 * @property {number} maxErrorRate
 */

/**
 * @typedef {object} Scenario
 * @property {string} name
 * @property {string} description
 * @property {number} peakRate requests per second at fraction 1
 * @property {Stage[]} stages
 * @property {Sla} sla
 * @property {Partial<import('./payloads.js').Mix>} mix
 */

/** @param {number} durationS @param {number} rate @returns {Stage} */
const hold = (durationS, rate) => ({ durationS, from: rate, to: rate })

/**
 * A day compressed into `durationS`: a cosine with its trough at 04:00 and its peak at 16:00,
 * in hourly linear pieces.
 * @param {number} durationS
 * @param {number} trough fraction of the peak at night
 * @returns {Stage[]}
 */
const day = (durationS, trough) => {
  /** @param {number} hour */
  const at = (hour) => trough + (1 - trough) * (0.5 - 0.5 * Math.cos((2 * Math.PI * (hour - 4)) / 24))
  return Array.from({ length: 24 }, (_, h) => ({ durationS: durationS / 24, from: at(h), to: at(h + 1) }))
}

/** @type {Record<string, Scenario>} */
export const SCENARIOS = {
  steady: {
    name: 'steady',
    description: 'a constant arrival rate: the everyday load',
    peakRate: 100,
    stages: [hold(30, 1)],
    sla: { p95Ms: 50, p99Ms: 100, maxErrorRate: 0.001 },
    mix: {},
  },
  ramp: {
    name: 'ramp',
    description: 'from 5% to the peak rate, then held: where latency starts to climb',
    peakRate: 200,
    stages: [{ durationS: 50, from: 0.05, to: 1 }, hold(10, 1)],
    sla: { p95Ms: 80, p99Ms: 200, maxErrorRate: 0.005 },
    mix: {},
  },
  spike: {
    name: 'spike',
    description: 'a base load, a sudden 5× burst for 10 s, back to the base: queueing and recovery',
    peakRate: 300,
    stages: [hold(10, 0.2), { durationS: 2, from: 0.2, to: 1 }, hold(10, 1), { durationS: 2, from: 1, to: 0.2 }, hold(10, 0.2)],
    sla: { p95Ms: 150, p99Ms: 400, maxErrorRate: 0.01 },
    mix: {},
  },
  soak: {
    name: 'soak',
    description: 'a moderate constant rate for 10 minutes: leaks, drift counters, cache churn',
    peakRate: 80,
    stages: [hold(600, 1)],
    sla: { p95Ms: 50, p99Ms: 100, maxErrorRate: 0.001 },
    mix: { knownEntityShare: 0.4 },
  },
  diurnal: {
    name: 'diurnal',
    description: 'a day compressed into 4 minutes: 15% of the peak at 04:00, the peak at 16:00',
    peakRate: 150,
    stages: day(240, 0.15),
    sla: { p95Ms: 75, p99Ms: 150, maxErrorRate: 0.002 },
    mix: {},
  },
}

export const SCENARIO_NAMES = Object.keys(SCENARIOS)

/** @param {Scenario} scenario */
export const totalDurationS = (scenario) => scenario.stages.reduce((sum, s) => sum + s.durationS, 0)

/**
 * The scenario stretched to `durationS` in all (every stage in proportion) and scaled to
 * `peakRate`; either left as defined when not given.
 * @param {Scenario} scenario
 * @param {{ durationS?: number, peakRate?: number }} overrides
 * @returns {Scenario}
 */
export const scaled = (scenario, { durationS, peakRate }) => {
  const factor = durationS === undefined ? 1 : durationS / totalDurationS(scenario)
  return {
    ...scenario,
    peakRate: peakRate ?? scenario.peakRate,
    stages: scenario.stages.map((s) => ({ ...s, durationS: s.durationS * factor })),
  }
}

/**
 * The arrival rate (requests per second) `tS` seconds into the run; 0 past its end.
 * @param {Scenario} scenario
 * @param {number} tS
 */
export const rateAt = (scenario, tS) => {
  let start = 0
  for (const s of scenario.stages) {
    if (tS < start + s.durationS) return scenario.peakRate * (s.from + ((s.to - s.from) * (tS - start)) / s.durationS)
    start += s.durationS
  }
  return 0
}

/**
 * The SLA as k6 thresholds: latency of the responses the script expected (2xx, and the 400s it
 * asked for), and the failure rate over all requests.
 * @param {Sla} sla
 * @returns {Record<string, string[]>}
 */
export const k6Thresholds = (sla) => ({
  'http_req_duration{expected_response:true}': [`p(95)<${sla.p95Ms}`, `p(99)<${sla.p99Ms}`],
  http_req_failed: [`rate<${sla.maxErrorRate}`],
})

/** k6 arrival rates are whole iterations per time unit. @param {number} rate */
const perSecond = (rate) => Math.max(1, Math.round(rate))

/**
 * k6 `options` for the scenario: an arrival-rate executor (open model: iterations start on
 * schedule whether or not earlier ones answered), VUs sized for the peak, and the SLA thresholds.
 * @param {Scenario} scenario
 */
export const k6Options = (scenario) => {
  const vus = { preAllocatedVUs: Math.max(10, Math.ceil(scenario.peakRate * 0.05)), maxVUs: Math.max(50, Math.ceil(scenario.peakRate * 0.5)) }
  const [first] = scenario.stages
  const constant = scenario.stages.length === 1 && first.from === first.to
  const executor = constant
    ? { executor: 'constant-arrival-rate', rate: perSecond(first.from * scenario.peakRate), timeUnit: '1s', duration: `${Math.round(first.durationS)}s`, ...vus }
    : {
        executor: 'ramping-arrival-rate',
        startRate: perSecond(first.from * scenario.peakRate),
        timeUnit: '1s',
        stages: scenario.stages.map((s) => ({ target: perSecond(s.to * scenario.peakRate), duration: `${Math.max(1, Math.round(s.durationS))}s` })),
        ...vus,
      }
  return {
    scenarios: { [scenario.name]: executor },
    thresholds: k6Thresholds(scenario.sla),
  }
}

/**
 * @typedef {object} Measured
 * @property {number} p95Ms
 * @property {number} p99Ms
 * @property {number} errorRate
 */

/**
 * The SLA thresholds a run crossed, each as a line a person reads (`p95 63.2 ms ≥ 50 ms`);
 * empty when it held. A missing percentile (nothing answered) crosses its threshold.
 * @param {Sla} sla
 * @param {Measured} measured
 * @returns {string[]}
 */
export const crossedThresholds = (sla, measured) => {
  /** @type {string[]} */
  const crossed = []
  const latency = /** @type {const} */ ([['p95', measured.p95Ms, sla.p95Ms], ['p99', measured.p99Ms, sla.p99Ms]])
  for (const [name, value, limit] of latency) {
    if (!(value < limit)) crossed.push(`${name} ${Number.isFinite(value) ? value.toFixed(1) : 'n/a'} ms ≥ ${limit} ms`)
  }
  if (!(measured.errorRate < sla.maxErrorRate)) crossed.push(`error rate ${(measured.errorRate * 100).toFixed(2)}% ≥ ${(sla.maxErrorRate * 100).toFixed(2)}%`)
  return crossed
}
