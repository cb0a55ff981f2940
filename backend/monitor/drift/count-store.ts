import { createUpstashClient } from '../../../shared/upstash-client.ts'
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

/**
 * The store over Upstash's REST API, on the client the edge builds too (stored strings, a
 * timeout per request, and no retries: a retry of a request that did land would add twice).
 * One transaction (`MULTI`/`EXEC` in one HTTP request) per flush, so a flush lands whole or not
 * at all and its marker says which; a flush that times out is resolved by the marker next time.
 */
export const redisCountStore = ({ url, token }: { url: string; token: string }): CountStore => {
  const redis = createUpstashClient({ url, token, requestTimeoutMs: 5_000 })
  return {
    async apply(hashes, marker, value) {
      const tx = redis.multi()
      for (const { key, indices, deltas } of hashes) {
        for (let k = 0; k < indices.length; k++) tx.hincrby(key, String(indices[k]), deltas[k])
        tx.expire(key, TTL_SECONDS)
      }
      tx.set(marker, value, { ex: TTL_SECONDS })
      await tx.exec()
    },
    async marker(key) {
      const value = await redis.get(key)
      return value === null ? undefined : String(value)
    },
    async read(keys) {
      if (keys.length === 0) return []
      const pipeline = redis.pipeline()
      for (const key of keys) pipeline.hgetall(key)
      return (await pipeline.exec<unknown[]>()).map(toCounts)
    },
  }
}
