import { Agent, request } from 'node:http'
import type { PayloadKind } from '../scenarios/payloads.js'
import { emptyOutcomes, recordAnswer, type Outcomes } from '../harness/outcomes.ts'

/** One request as the sender sends it. */
export interface Outgoing {
  body: string
  headers: Record<string, string>
  kind: PayloadKind
  expectedStatus: number
}

export interface OpenLoopOptions {
  url: string
  /** Arrivals per second, on a fixed schedule. */
  rate: number
  durationS: number
  /** Requests in flight at most; an arrival beyond it is not sent and counts as a failure. */
  maxInFlight: number
  timeoutMs: number
  next(): Outgoing
}

export interface OpenLoopResult {
  outcomes: Outcomes
  /** Arrivals scheduled (sent or overflowed). */
  scheduled: number
  elapsedS: number
}

/**
 * An open-model sender: request i leaves at start + i / rate whether or not earlier ones have
 * answered, so a server that slows down meets a growing queue, as it does with real clients.
 * Latency runs from the scheduled time, not the moment the request left, so a sender that fell
 * behind counts its own delay against the target rather than hiding it (no coordinated omission).
 */
export const runOpenLoop = async ({ url, rate, durationS, maxInFlight, timeoutMs, next }: OpenLoopOptions): Promise<OpenLoopResult> => {
  const target = new URL(url)
  const agent = new Agent({ keepAlive: true, maxSockets: maxInFlight })
  const outcomes = emptyOutcomes()
  const total = Math.max(1, Math.round(rate * durationS))
  const intervalMs = 1_000 / rate
  let inFlight = 0
  let settle: (() => void) | undefined

  const send = (scheduledAt: number) => {
    if (inFlight >= maxInFlight) {
      outcomes.overflow++
      return
    }
    inFlight++
    const out = next()
    // Exactly one outcome per request, whichever of answer, error and timeout comes first.
    let finished = false
    const finish = (record: () => void) => {
      if (finished) return
      finished = true
      record()
      inFlight--
      if (inFlight === 0) settle?.()
    }
    const req = request(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out.body), ...out.headers } }, (res) => {
      const variant = res.headers['x-variant']
      res.resume()
      res.once('end', () => finish(() => recordAnswer(outcomes, {
        status: res.statusCode ?? 0, latencyMs: performance.now() - scheduledAt, variant: Array.isArray(variant) ? variant[0] : variant, kind: out.kind, expectedStatus: out.expectedStatus,
      })))
      res.once('error', () => finish(() => outcomes.transportErrors++))
    })
    req.setTimeout(timeoutMs, () => {
      finish(() => outcomes.timeouts++)
      req.destroy()
    })
    req.once('error', () => finish(() => outcomes.transportErrors++))
    req.end(out.body)
  }

  const started = performance.now()
  let sent = 0
  while (sent < total) {
    const now = performance.now()
    while (sent < total && started + sent * intervalMs <= now) {
      send(started + sent * intervalMs)
      sent++
    }
    if (sent < total) await new Promise((r) => setTimeout(r, Math.max(0, started + sent * intervalMs - performance.now())))
  }
  // Whatever is still in flight answers or times out within timeoutMs.
  if (inFlight > 0) await new Promise<void>((resolve) => (settle = resolve))
  const elapsedS = (performance.now() - started) / 1000
  agent.destroy()
  return { outcomes, scheduled: total, elapsedS }
}
