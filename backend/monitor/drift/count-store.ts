import type { Redis } from '@upstash/redis'
import { createUpstashClient, within } from '../../../shared/upstash-client.ts'
import type { DriftLayout } from './layout.ts'

/** Hashes outlive the longest window (180 minutes) with room for a late reader. */
const TTL_SECONDS = 4 * 3600

/**
 * One hash per (model, version, layout, minute): `drift:{model}:{version}:{fingerprint}:{minute}`,
 * a field per flat index of the layout (backend/monitor/drift/layout.ts). The fingerprint keeps
 * replicas that load a different baseline for the same version from adding into each other's bins.
 */
export const countsKey = (layout: DriftLayout, minute: number): string =>
  `drift:${layout.model}:${layout.version}:${layout.fingerprint}:${minute}`

/** Sequence number of the last transaction a replica got applied (`drift:flush:{replica}`). */
export const markerKey = (replica: string): string => `drift:flush:${replica}`

export interface HashIncrements {
  key: string
  /** Flat indices (the fields) and what to add to each. */
  indices: readonly number[]
  deltas: readonly number[]
}

/** What merging counts across replicas needs of Redis. */
export interface CountStore {
  /** HINCRBYs every field, renews each hash's expiry and sets `marker` to `value`: all or nothing. */
  apply(hashes: readonly HashIncrements[], marker: string, value: string): Promise<void>
  /** A marker's value; undefined when unset. */
  marker(key: string): Promise<string | undefined>
  /** Each hash as flat index → count, in the order asked; a missing hash is empty. */
  read(keys: readonly string[]): Promise<Array<Map<number, number>>>
}

/** HGETALL's raw reply: a flat `[field, value, …]` array (an object from a deserializing client). */
const toCounts = (reply: unknown): Map<number, number> => {
  const pairs = Array.isArray(reply)
    ? Array.from({ length: reply.length / 2 }, (_, i) => [reply[2 * i], reply[2 * i + 1]])
    : Object.entries(reply ?? {})
  return new Map(pairs.map(([field, value]) => [Number(field), Number(value)]))
}

/** How long one call to Redis may take (`DRIFT_REDIS_TIMEOUT_MS`). */
export const DEFAULT_DRIFT_REDIS_TIMEOUT_MS = 1_000

export interface RedisCountStoreOptions {
  url: string
  token: string
  /** Longest wait per call; slower fails the call (default `DEFAULT_DRIFT_REDIS_TIMEOUT_MS`). */
  timeoutMs?: number
  /** The client to use instead of one built from `url` and `token` (tests). */
  client?: Redis
}

/**
 * The store over Upstash's REST API, on the client the edge builds too (stored strings, a
 * timeout per request, and no retries: a retry of a request that did land would add twice).
 * One transaction (`MULTI`/`EXEC` in one HTTP request) per flush, so a flush lands whole or not
 * at all and its marker says which; a flush that fails or takes longer than `timeoutMs` is
 * resolved by the marker next time, and a read that does fails the report it was for.
 */
export const redisCountStore = ({ url, token, timeoutMs = DEFAULT_DRIFT_REDIS_TIMEOUT_MS, client }: RedisCountStoreOptions): CountStore => {
  const redis = client ?? createUpstashClient({ url, token, requestTimeoutMs: 5_000 })
  return {
    async apply(hashes, marker, value) {
      const tx = redis.multi()
      for (const { key, indices, deltas } of hashes) {
        for (let k = 0; k < indices.length; k++) tx.hincrby(key, String(indices[k]), deltas[k])
        tx.expire(key, TTL_SECONDS)
      }
      tx.set(marker, value, { ex: TTL_SECONDS })
      await within(tx.exec(), timeoutMs)
    },
    async marker(key) {
      const value = await within(redis.get(key), timeoutMs)
      return value === null ? undefined : String(value)
    },
    async read(keys) {
      if (keys.length === 0) return []
      const pipeline = redis.pipeline()
      for (const key of keys) pipeline.hgetall(key)
      return (await within(pipeline.exec<unknown[]>(), timeoutMs)).map(toCounts)
    },
  }
}
