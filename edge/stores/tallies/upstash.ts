import type { Redis } from '@upstash/redis'
import { DEFAULT_EDGE_REDIS_TIMEOUT_MS, within } from '../../../shared/upstash-client.ts'
import { applyOnce } from '../../../shared/write-once.ts'
import { Problem } from '../../problem.ts'
import { REQUEST_METRICS_HASH, type SharedTally, type Tally } from './tally.ts'

export interface UpstashTallyOptions {
  /** Longest wait for Redis per flush or read (default `DEFAULT_EDGE_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
}

/** The hash `metrics:requests`: one HINCRBY per changed field, all in one script guarded by the write's id. */
export class UpstashTally implements SharedTally {
  readonly #timeoutMs: number

  constructor(private readonly redis: Redis, { timeoutMs = DEFAULT_EDGE_REDIS_TIMEOUT_MS }: UpstashTallyOptions = {}) {
    this.#timeoutMs = timeoutMs
  }

  async add(writeId: string, deltas: Tally): Promise<void> {
    await applyOnce(this.redis, writeId, [...deltas].map(([name, delta]) => ['HINCRBY', REQUEST_METRICS_HASH, name, String(delta)]), { timeoutMs: this.#timeoutMs })
  }

  async read(): Promise<Tally> {
    const fields = (await within(this.redis.hgetall<Record<string, unknown>>(REQUEST_METRICS_HASH), this.#timeoutMs).catch(() => {
      throw new Problem(503, 'Service Unavailable', 'the shared request counts cannot be read right now; retry shortly', { slug: 'metrics-unavailable', headers: { 'retry-after': '1' } })
    })) ?? {}
    const tally: Tally = new Map()
    for (const [name, value] of Object.entries(fields)) {
      const n = Number(value)
      if (Number.isSafeInteger(n)) tally.set(name, n)
    }
    return tally
  }
}
