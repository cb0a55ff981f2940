import type { Redis } from '@upstash/redis'
import { createUpstashClient, within } from '../../../shared/upstash-client.ts'
import { applyOnce, type RedisCommand } from '../../../shared/write-once.ts'
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

export interface HashIncrements {
  key: string
  /** Flat indices (the fields) and what to add to each. */
  indices: readonly number[]
  deltas: readonly number[]
}

/** What merging counts across replicas needs of Redis. */
export interface CountStore {
  /**
   * HINCRBYs every field and renews each hash's expiry, all or nothing, and once per `writeId`
   * however often it is sent (shared/write-once.ts). Resolves once Redis answered (applied now
   * or before); rejects `WriteInDoubt` when no answer came within the budget.
   */
  apply(writeId: string, hashes: readonly HashIncrements[]): Promise<void>
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
 * timeout per request, and no retries of its own). A flush is one script applied once per id
 * (`applyOnce`), so it lands whole or not at all and a resend of a flush that did land (or lands
 * later still) adds nothing; a read slower than `timeoutMs` fails the report it was for.
 */
export const redisCountStore = ({ url, token, timeoutMs = DEFAULT_DRIFT_REDIS_TIMEOUT_MS, client }: RedisCountStoreOptions): CountStore => {
  const redis = client ?? createUpstashClient({ url, token, requestTimeoutMs: 5_000 })
  return {
    async apply(writeId, hashes) {
      const commands: RedisCommand[] = []
      for (const { key, indices, deltas } of hashes) {
        for (let k = 0; k < indices.length; k++) commands.push(['HINCRBY', key, String(indices[k]), String(deltas[k])])
        commands.push(['EXPIRE', key, String(TTL_SECONDS)])
      }
      await applyOnce(redis, writeId, commands, { timeoutMs })
    },
    async read(keys) {
      if (keys.length === 0) return []
      const pipeline = redis.pipeline()
      for (const key of keys) pipeline.hgetall(key)
      return (await within(pipeline.exec<unknown[]>(), timeoutMs)).map(toCounts)
    },
  }
}
