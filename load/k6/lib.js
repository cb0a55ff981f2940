import { check } from 'k6'
import http from 'k6/http'
import { Counter, Trend } from 'k6/metrics'
import { SCENARIOS, SEEDED_USER_IDS, createPayloads, k6Options, scaled } from '../scenarios/index.js'

/**
 * What every scenario script shares: the target and key from the environment, the catalog
 * read once in `setup`, and an iteration that sends one generated predict request.
 *
 * Env: TARGET (the edge's base URL; default the local stack's http://127.0.0.1:8787), API_KEY,
 * MODEL (credit-risk), DURATION (seconds in all) and RATE (peak requests/s) to rescale the shape,
 * SEED, KNOWN_IDS (comma-separated entity ids the target's feature store holds).
 */

const TARGET = (__ENV.TARGET || 'http://127.0.0.1:8787').replace(/\/+$/, '')
const API_KEY = __ENV.API_KEY || ''
const MODEL = __ENV.MODEL || 'credit-risk'

/** @param {string | undefined} text */
const optionalNumber = (text) => (text === undefined || text === '' ? undefined : Number(text))

/** Predict requests by the variant that served them (`X-Variant`) and the kind of input sent. */
const predictsByVariant = new Counter('predicts_by_variant')
/** Predict latency tagged with the serving variant: the A/B arms side by side. */
const predictDuration = new Trend('predict_duration', true)

/**
 * The scenario, rescaled by DURATION and RATE when set.
 * @param {string} name
 */
const scenarioFor = (name) => {
  const scenario = SCENARIOS[name]
  if (scenario === undefined) throw new Error(`no scenario "${name}"`)
  return scaled(scenario, { durationS: optionalNumber(__ENV.DURATION), peakRate: optionalNumber(__ENV.RATE) })
}

/**
 * k6 options of the named scenario: its arrival-rate executor and SLA thresholds.
 * @param {string} name
 * @returns {import('k6/options').Options}
 */
export const optionsFor = (name) => /** @type {import('k6/options').Options} */ (k6Options(scenarioFor(name)))

/** @typedef {{ catalog: import('../scenarios/payloads.js').Catalog }} SetupData */

/**
 * Reads the model's catalog entry (its feature spec and pinnable versions) once per run.
 * @returns {SetupData}
 */
export const setup = () => {
  const res = http.get(`${TARGET}/v1/models/${MODEL}`, { headers: { 'X-Api-Key': API_KEY }, tags: { name: 'catalog' } })
  if (res.status !== 200) throw new Error(`GET ${TARGET}/v1/models/${MODEL} answered ${res.status}: ${String(res.body).slice(0, 300)}`)
  return { catalog: /** @type {import('../scenarios/payloads.js').Catalog} */ (/** @type {unknown} */ (res.json())) }
}

/**
 * The iteration of the named scenario: one predict request from the VU's own payload stream
 * (seeded by SEED and the VU number), judged against the status its input should get.
 * @param {string} name
 * @returns {(data: SetupData) => void}
 */
export const iterationFor = (name) => {
  const { mix } = scenarioFor(name)
  const knownIds = __ENV.KNOWN_IDS ? __ENV.KNOWN_IDS.split(',') : SEEDED_USER_IDS
  /** @type {import('../scenarios/payloads.js').Payloads | undefined} */
  let payloads
  return (data) => {
    // Module state is per VU in k6: each VU draws its own stream.
    if (payloads === undefined) payloads = createPayloads({ catalog: data.catalog, mix, seed: (optionalNumber(__ENV.SEED) ?? 1) * 100_003 + __VU, knownIds })
    const payload = payloads.next()
    const pinned = payload.headers['X-Model-Version'] !== undefined
    const res = http.post(`${TARGET}${payloads.path}`, payload.body, {
      headers: { 'Content-Type': 'application/json', 'X-Api-Key': API_KEY, ...payload.headers },
      tags: { name: 'predict', kind: payload.kind, pinned: String(pinned) },
      // A refusal the scenario asked for is an expected response, not a failed request.
      responseCallback: http.expectedStatuses(payload.expectedStatus),
    })
    const variant = res.headers['X-Variant'] || 'none'
    predictsByVariant.add(1, { variant, kind: payload.kind })
    if (res.status === 200) predictDuration.add(res.timings.duration, { variant })
    check(res, {
      [`${payload.kind} input answered ${payload.expectedStatus}`]: (r) => r.status === payload.expectedStatus,
      ...(payload.kind === 'fixed' && { 'fixed input counted in X-Input-Normalized': (r) => Number(r.headers['X-Input-Normalized']) > 0 }),
    })
  }
}
