import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../../shared/upstash-client.ts'
import { Problem } from '../../problem.ts'

/** Per API key: requests whose input needed fixing, and how many fixes in all. */
export interface NormalizationTotals {
  [keyName: string]: { requests: number; fixes: number }
}

/**
 * Where input-normalization counts per API key accumulate, so a client with an encoding bug shows
 * up as a number on a dashboard rather than a line among millions. Only requests that needed a
 * fix are recorded: a well-behaved client costs nothing.
 */
export interface NormalizationMetrics {
  record(keyName: string, fixes: number): Promise<void>
  totals(): Promise<NormalizationTotals>
}

/** The isolate's own counts (no Redis): each isolate reports what it saw since it started. */
export class MemoryNormalizationMetrics implements NormalizationMetrics {
  readonly #totals: NormalizationTotals = {}

  async record(keyName: string, fixes: number): Promise<void> {
    const entry = (this.#totals[keyName] ??= { requests: 0, fixes: 0 })
    entry.requests++
    entry.fixes += fixes
  }

  async totals(): Promise<NormalizationTotals> {
    return structuredClone(this.#totals)
  }
}

export const NORMALIZATION_HASH = 'metrics:normalization'

export interface UpstashNormalizationMetricsOptions {
  /** Longest wait for Redis per count or read (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
}

/**
 * Counts every isolate shares: fields `<key>:requests` and `<key>:fixes` of one Redis hash. Every
 * call is bounded by `timeoutMs`: a count that does not land in time is given up (it runs after
 * the response), a read that does not is a 503 the scraper retries.
 */
export class UpstashNormalizationMetrics implements NormalizationMetrics {
  readonly #timeoutMs: number

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS }: UpstashNormalizationMetricsOptions = {}) {
    this.#timeoutMs = timeoutMs
  }

  async record(keyName: string, fixes: number): Promise<void> {
    const pipeline = this.redis.pipeline()
    pipeline.hincrby(NORMALIZATION_HASH, `${keyName}:requests`, 1)
    pipeline.hincrby(NORMALIZATION_HASH, `${keyName}:fixes`, fixes)
    await within(pipeline.exec(), this.#timeoutMs)
  }

  async totals(): Promise<NormalizationTotals> {
    const fields = (await within(this.redis.hgetall<Record<string, unknown>>(NORMALIZATION_HASH), this.#timeoutMs).catch(() => {
      throw new Problem(503, 'Service Unavailable', 'the shared normalization counts cannot be read right now; retry shortly', { slug: 'metrics-unavailable', headers: { 'retry-after': '1' } })
    })) ?? {}
    const totals: NormalizationTotals = {}
    for (const [field, value] of Object.entries(fields)) {
      const at = field.lastIndexOf(':')
      const kind = field.slice(at + 1)
      if (kind !== 'requests' && kind !== 'fixes') continue
      const entry = (totals[field.slice(0, at)] ??= { requests: 0, fixes: 0 })
      entry[kind] = Number(value)
    }
    return totals
  }
}

/** A label value escaped for the text exposition. */
export const labelValue = (value: string): string => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')

/** Prometheus text exposition of the totals. */
export const normalizationExposition = (totals: NormalizationTotals): string => {
  const keys = Object.keys(totals).sort()
  return [
    '# HELP edge_input_normalized_requests_total Requests whose input the edge had to fix (double encoding, BOM, whitespace, numeric strings), by API key.',
    '# TYPE edge_input_normalized_requests_total counter',
    ...keys.map((k) => `edge_input_normalized_requests_total{key="${labelValue(k)}"} ${totals[k].requests}`),
    '# HELP edge_input_normalization_fixes_total Input fixes applied, by API key.',
    '# TYPE edge_input_normalization_fixes_total counter',
    ...keys.map((k) => `edge_input_normalization_fixes_total{key="${labelValue(k)}"} ${totals[k].fixes}`),
    '',
  ].join('\n')
}
