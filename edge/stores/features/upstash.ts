import { createUpstashClient, type UpstashClientOptions } from '../../../shared/upstash-client.ts'
import { featureKey, type FeatureStore, type StoredFeatures } from './feature-store.ts'

/**
 * The one command the store needs; `@upstash/redis`'s `Redis` fits, tests may pass their own.
 * Typed loosely on purpose: with `automaticDeserialization: false` @upstash/redis hands back
 * HGETALL's raw reply, a flat `[field, value, ...]` array (empty when the key is missing), not
 * the object its types promise; an object (a deserializing client) is accepted too.
 */
export interface HashReader {
  hgetall(key: string): Promise<unknown>
}

export interface UpstashFeatureStoreOptions extends UpstashClientOptions {
  /** A ready client instead of building one from `url`/`token` (tests). */
  client?: HashReader
}

const asString = (value: unknown): string => (typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value))

/** HGETALL's reply (flat array or object) as a hash of strings; `undefined` when there is none. */
export const toStoredHash = (reply: unknown): StoredFeatures | undefined => {
  if (reply === null || reply === undefined) return undefined
  const out: StoredFeatures = {}
  if (Array.isArray(reply)) {
    if (reply.length % 2 !== 0) throw new Error(`HGETALL answered an odd number of elements (${reply.length})`)
    for (let i = 0; i < reply.length; i += 2) if (reply[i + 1] !== null && reply[i + 1] !== undefined) out[asString(reply[i])] = asString(reply[i + 1])
  } else if (typeof reply === 'object') {
    for (const [name, value] of Object.entries(reply)) if (value !== null && value !== undefined) out[name] = asString(value)
  } else {
    throw new Error(`HGETALL answered a ${typeof reply}`)
  }
  // A missing key is an empty reply: Redis has no empty hashes.
  return Object.keys(out).length === 0 ? undefined : out
}

/** Entity features from Upstash Redis: `HGETALL features:{entity}:{id}`. */
export class UpstashFeatureStore implements FeatureStore {
  private readonly client: HashReader

  constructor({ client, ...options }: UpstashFeatureStoreOptions) {
    this.client = client ?? createUpstashClient(options)
  }

  async read(entity: string, id: string): Promise<StoredFeatures | undefined> {
    return toStoredHash(await this.client.hgetall(featureKey(entity, id)))
  }
}
