/** One row's answer as the edge prediction cache keeps it. */
export interface CachedRow {
  /** The model's class probabilities by label: the label itself is derived again on a hit, by the model's postprocess as it is then. */
  scores: Record<string, number>
  /** When it was written (epoch ms): a hit needs it younger than the model's TTL as the rollout says now. */
  at: number
}

/**
 * Where cached rows live: the Workers Cache API of the colo in a worker, an isolate's memory
 * where there is none (Node). Keys name the model, the served version and the row's hash
 * (`rowKey`); entries expire after the TTL they were written with.
 */
export interface PredictionCacheStore {
  get(key: string): Promise<CachedRow | undefined>
  put(key: string, row: CachedRow, ttlSeconds: number): Promise<void>
  delete(key: string): Promise<void>
}

const hex = (bytes: ArrayBuffer): string => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('')

/**
 * The key of one encoded input row answered by `version` of `model`: the row is hashed as the
 * 32-bit floats the model is sent (SHA-256), so any change of a feature the model sees, an
 * entity feature included, is another key, and a change it cannot see is not.
 */
export const rowKey = async (model: string, version: number, row: Float32Array): Promise<string> =>
  `${encodeURIComponent(model)}/${version}/${hex(await crypto.subtle.digest('SHA-256', row))}`
