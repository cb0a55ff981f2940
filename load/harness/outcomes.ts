import { percentile } from './percentile.ts'
import type { PayloadKind } from '../scenarios/payloads.js'

/**
 * What a load run saw, request by request: latencies of the answers, status classes, the
 * refusals the scenario asked for (counted apart: they are not failures), answers by the
 * variant that served them, and failures (transport errors, timeouts, any status other than
 * the one the input should get, a request an open-model sender could not send).
 */
export interface Outcomes {
  latenciesMs: number[]
  byStatusClass: Map<string, number>
  byVariant: Map<string, number[]>
  expectedRefusals: number
  /** Answers with another status than their input deserves (a 5xx, a 429, a 2xx for a refused input). */
  unexpected: number
  transportErrors: number
  timeouts: number
  /** Requests an open-model sender did not send because its in-flight cap was reached. */
  overflow: number
}

export const emptyOutcomes = (): Outcomes => ({
  latenciesMs: [], byStatusClass: new Map(), byVariant: new Map(), expectedRefusals: 0, unexpected: 0, transportErrors: 0, timeouts: 0, overflow: 0,
})

const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1)

export const statusClass = (status: number): string => (status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other')

/** Records one answer: `kind` and `expectedStatus` from the payload that was sent. */
export const recordAnswer = (o: Outcomes, answer: { status: number; latencyMs: number; variant: string | undefined; kind: PayloadKind; expectedStatus: number }): void => {
  bump(o.byStatusClass, statusClass(answer.status))
  if (answer.status !== answer.expectedStatus) o.unexpected++
  else if (answer.kind === 'refused') o.expectedRefusals++
  // Latency of accepted answers only: the SLA is about predictions, not about quick 400s.
  if (answer.status >= 200 && answer.status < 300) {
    o.latenciesMs.push(answer.latencyMs)
    const variant = answer.variant ?? 'none'
    const list = o.byVariant.get(variant) ?? []
    list.push(answer.latencyMs)
    o.byVariant.set(variant, list)
  }
}

export const answered = (o: Outcomes): number => [...o.byStatusClass.values()].reduce((a, b) => a + b, 0)

/** Failures over every request sent (answered or not). */
export const errorRate = (o: Outcomes): number => {
  const failures = o.unexpected + o.transportErrors + o.timeouts + o.overflow
  const sent = answered(o) + o.transportErrors + o.timeouts + o.overflow
  return sent > 0 ? failures / sent : Number.NaN
}

export interface LatencySummary {
  p50Ms: number
  p95Ms: number
  p99Ms: number
}

export const latencySummary = (latenciesMs: readonly number[]): LatencySummary => {
  const sorted = Float64Array.from(latenciesMs).sort()
  const at = (p: number) => (sorted.length > 0 ? percentile(sorted, p) : Number.NaN)
  return { p50Ms: at(50), p95Ms: at(95), p99Ms: at(99) }
}
