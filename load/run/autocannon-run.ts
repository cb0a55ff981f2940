import autocannon from 'autocannon'
import { rateAt, totalDurationS } from '../scenarios/index.js'
import type { Payloads, PayloadKind } from '../scenarios/payloads.js'
import type { Scenario } from '../scenarios/shapes.js'
import { emptyOutcomes, recordAnswer, type Outcomes } from '../harness/outcomes.ts'

/** A stretch of the run played by one autocannon instance at one rate. */
export interface Slice {
  durationS: number
  rate: number
}

/**
 * The scenario's shape as constant-rate slices: one a second at the rate of its middle,
 * neighbours with the same (rounded) rate merged, so a flat stretch is one instance.
 */
export const slicesOf = (scenario: Scenario): Slice[] => {
  const slices: Slice[] = []
  const total = totalDurationS(scenario)
  for (let start = 0; start < total - 1e-9; start += 1) {
    const durationS = Math.min(1, total - start)
    const rate = Math.max(1, Math.round(rateAt(scenario, start + durationS / 2)))
    const last = slices[slices.length - 1]
    if (last?.rate === rate) last.durationS += durationS
    else slices.push({ durationS, rate })
  }
  return slices
}

export interface RunOptions {
  target: string
  apiKey: string
  payloads: Payloads
  scenario: Scenario
  /** Most connections per slice (fewer at low rates: autocannon paces each connection on its own). */
  connections: number
  /** Called about once a second with what has been seen so far. */
  onProgress?: (progress: { elapsedS: number; totalS: number; rate: number; outcomes: Outcomes }) => void
}

export interface RunResult {
  outcomes: Outcomes
  elapsedS: number
}

const REQUEST_TIMEOUT_S = 10

const header = (headers: Record<string, string | string[]>, name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value
  return undefined
}

interface Sent {
  kind: PayloadKind
  expectedStatus: number
}

/**
 * Plays the scenario with autocannon's programmatic API, slice by slice, every request with its
 * own generated body and headers. autocannon is closed-loop (a connection sends its next request
 * after the answer), paced to each slice's rate; `npm run load:capacity` is the open-model one.
 */
export const runScenario = async ({ target, apiKey, payloads, scenario, connections, onProgress }: RunOptions): Promise<RunResult> => {
  const outcomes = emptyOutcomes()
  const totalS = totalDurationS(scenario)
  const started = performance.now()
  let rate = 0
  const ticker = setInterval(() => onProgress?.({ elapsedS: (performance.now() - started) / 1000, totalS, rate, outcomes }), 1_000)
  // autocannon calls onResponse (which knows the request) and then emits 'response' (which knows
  // the latency) synchronously, one after the other: the first leaves the answer for the second.
  let pending: { status: number; variant: string | undefined; sent: Sent } | undefined
  try {
    for (const slice of slicesOf(scenario)) {
      rate = slice.rate
      const instance = autocannon({
        url: `${target}${payloads.path}`,
        method: 'POST',
        connections: Math.max(1, Math.min(connections, slice.rate)),
        duration: slice.durationS,
        overallRate: slice.rate,
        timeout: REQUEST_TIMEOUT_S,
        requests: [{
          setupRequest: (request, context) => {
            const payload = payloads.next()
            context.sent = { kind: payload.kind, expectedStatus: payload.expectedStatus } satisfies Sent
            return { ...request, body: payload.body, headers: { 'content-type': 'application/json', 'x-api-key': apiKey, ...payload.headers } }
          },
          onResponse: (status, _body, context, headers) => {
            pending = { status, variant: header(headers, 'x-variant'), sent: context.sent as Sent }
          },
        }],
      })
      instance.on('response', (_client: unknown, _status: number, _bytes: number, latencyMs: number) => {
        if (pending === undefined) return
        recordAnswer(outcomes, { status: pending.status, latencyMs, variant: pending.variant, ...pending.sent })
        pending = undefined
      })
      const result = await instance
      outcomes.timeouts += result.timeouts
      outcomes.transportErrors += result.errors - result.timeouts
    }
  } finally {
    clearInterval(ticker)
  }
  return { outcomes, elapsedS: (performance.now() - started) / 1000 }
}
