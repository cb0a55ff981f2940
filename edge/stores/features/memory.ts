import demoFeatures from './demo-seed.json' with { type: 'json' }
import type { FeatureStore, StoredFeatures } from './feature-store.ts'

/** A seed value as written in JSON; stored as Redis would hold it (a string). */
export type SeedValue = string | number | boolean

/** `{ "user": { "u-1": { "account_age_months": 48, ... } } }`: entity → id → feature → value. */
export type FeatureSeed = Record<string, Record<string, Record<string, SeedValue>>>

/** The embedded entity features when no Redis is configured (local dev): a handful of demo users. */
export const DEFAULT_FEATURE_SEED: FeatureSeed = demoFeatures

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

const toStored = (value: SeedValue): string => (typeof value === 'string' ? value : String(value))

/**
 * The embedded default feature store (no Redis configured): entity hashes held in the isolate,
 * seeded from a JSON object. Values are kept as strings, exactly as `HSET` would store them, so
 * the same conversion rules apply as with Redis.
 */
export class MemoryFeatureStore implements FeatureStore {
  private readonly hashes = new Map<string, Map<string, StoredFeatures>>()

  constructor(seed: FeatureSeed = {}) {
    if (!isRecord(seed)) throw new TypeError('a feature seed is an object of entities')
    for (const [entity, ids] of Object.entries(seed)) {
      if (!isRecord(ids)) throw new TypeError(`feature seed: "${entity}" must map ids to feature objects`)
      for (const [id, values] of Object.entries(ids)) {
        if (!isRecord(values)) throw new TypeError(`feature seed: ${entity} "${id}" must be an object of feature values`)
        for (const [name, value] of Object.entries(values)) {
          if (!['string', 'number', 'boolean'].includes(typeof value)) {
            throw new TypeError(`feature seed: ${entity} "${id}".${name} must be a string, number or boolean`)
          }
        }
        this.set(entity, id, values as Record<string, SeedValue>)
      }
    }
  }

  async read(entity: string, id: string): Promise<StoredFeatures | undefined> {
    const hash = this.hashes.get(entity)?.get(id)
    return hash === undefined ? undefined : { ...hash }
  }

  /** Like `HSET`: adds or replaces fields of one entity's hash. */
  set(entity: string, id: string, values: Record<string, SeedValue>): void {
    let ids = this.hashes.get(entity)
    if (!ids) this.hashes.set(entity, (ids = new Map()))
    const hash = { ...ids.get(id) }
    for (const [name, value] of Object.entries(values)) hash[name] = toStored(value)
    ids.set(id, hash)
  }

  /** Like `DEL`. */
  delete(entity: string, id: string): void {
    this.hashes.get(entity)?.delete(id)
  }
}
