import { Redis } from '@upstash/redis'

export interface UpstashClientOptions {
  /** Upstash REST endpoint and bearer token (`UPSTASH_REDIS_REST_URL` / `_TOKEN`). */
  url: string
  token: string
  /** Hard cap on one HTTP request (default 2000 ms): abandoned requests must not pile up. */
  requestTimeoutMs?: number
}

/**
 * Builds the `@upstash/redis` client the way both tiers need it, in workerd and Node alike:
 * - values come back as stored strings (`automaticDeserialization: false`; `"007"` stays `"007"`),
 * - no retries (callers own their budgets: the edge's feature reads have tens of milliseconds
 *   and a breaker, the backend's drift flush resends what did not land), no telemetry headers,
 *   no sync-token bookkeeping,
 * - every request gets a fresh abort signal (a function, so an abort rejects instead of
 *   resolving to the abort reason as a static signal would).
 * `@upstash/redis` calls the global `fetch` at call time (`fetch(url, init)`); no bare `fetch`
 * reference is held anywhere, which workerd would refuse with "Illegal invocation".
 */
export const createUpstashClient = ({ url, token, requestTimeoutMs = 2_000 }: UpstashClientOptions): Redis =>
  new Redis({
    url,
    token,
    automaticDeserialization: false,
    retry: false,
    enableTelemetry: false,
    readYourWrites: false,
    signal: () => AbortSignal.timeout(requestTimeoutMs),
  })

/** The edge's default wait for one Redis call outside the feature and rate-limit budgets (`REDIS_TIMEOUT_MS`). */
export const DEFAULT_EDGE_REDIS_TIMEOUT_MS = 200

/** Redis did not answer in time; what was sent may still be applied. */
export class RedisTimeout extends Error {}

/**
 * Settles as `work` does, or fails once `ms` have passed: the one time limit on a Redis call in
 * either tier. A late answer is dropped (the abort signal above ends the request itself later).
 */
export const within = <T>(work: Promise<T>, ms: number): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeout(`no answer from Redis within ${ms} ms`)), ms)
  })
  return Promise.race([work, expired]).finally(() => clearTimeout(timer))
}
