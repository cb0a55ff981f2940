import type { Redis } from '@upstash/redis'

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

/** Counts every isolate shares: fields `<key>:requests` and `<key>:fixes` of one Redis hash. */
export class UpstashNormalizationMetrics implements NormalizationMetrics {
  constructor(private readonly redis: Redis) {}

  async record(keyName: string, fixes: number): Promise<void> {
    const pipeline = this.redis.pipeline()
    pipeline.hincrby(NORMALIZATION_HASH, `${keyName}:requests`, 1)
    pipeline.hincrby(NORMALIZATION_HASH, `${keyName}:fixes`, fixes)
    await pipeline.exec()
  }

  async totals(): Promise<NormalizationTotals> {
    const fields = (await this.redis.hgetall<Record<string, unknown>>(NORMALIZATION_HASH)) ?? {}
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

const label = (value: string): string => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')

/** Prometheus text exposition of the totals. */
export const normalizationExposition = (totals: NormalizationTotals): string => {
  const keys = Object.keys(totals).sort()
  return [
    '# HELP edge_input_normalized_requests_total Requests whose input the edge had to fix (double encoding, BOM, whitespace, numeric strings), by API key.',
    '# TYPE edge_input_normalized_requests_total counter',
    ...keys.map((k) => `edge_input_normalized_requests_total{key="${label(k)}"} ${totals[k].requests}`),
    '# HELP edge_input_normalization_fixes_total Input fixes applied, by API key.',
    '# TYPE edge_input_normalization_fixes_total counter',
    ...keys.map((k) => `edge_input_normalization_fixes_total{key="${label(k)}"} ${totals[k].fixes}`),
    '',
  ].join('\n')
}
