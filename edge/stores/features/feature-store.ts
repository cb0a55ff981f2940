/**
 * Where entity features live: one Redis hash per entity instance, `features:{entity}:{id}`, whose
 * fields are feature names and whose values are the stored strings (`"48"`, `"true"`, `"rent"`).
 * Conversion to typed values against the feature spec happens in the enrich middleware.
 */
export type StoredFeatures = Record<string, string>

export interface FeatureStore {
  /** The stored hash of one entity, or `undefined` when there is none. Rejects when the store fails. */
  read(entity: string, id: string): Promise<StoredFeatures | undefined>
}

/** The Redis key of an entity's feature hash. */
export const featureKey = (entity: string, id: string): string => `features:${entity}:${id}`
