/**
 * Canonical JSON: object keys sorted, no whitespace, so two instances that differ only in key
 * order get the same key. Non-finite numbers are spelled out (`NaN`, not `null`) so they never
 * collide with `null`; `-0` is `0`, as in JSON.
 */
export const canonicalJson = (value: unknown): string => {
  if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : String(value)
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined'
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`
}

export interface Deduped<T> {
  /** Distinct instances, in order of first appearance. */
  unique: T[]
  /** For each input instance, the index of its twin in `unique`. */
  indexOf: number[]
}

/**
 * Identical instances within one request are computed once: send `unique` to the model, then
 * answer instance `i` with result `indexOf[i]` (see `fanOut`).
 */
export const dedupeInstances = <T>(instances: readonly T[]): Deduped<T> => {
  // One instance has no twin: skip the canonical key, the costliest part for the common request.
  if (instances.length === 1) return { unique: [instances[0]], indexOf: [0] }
  const seen = new Map<string, number>()
  const unique: T[] = []
  const indexOf = instances.map((instance) => {
    const key = canonicalJson(instance)
    let at = seen.get(key)
    if (at === undefined) {
      at = unique.push(instance) - 1
      seen.set(key, at)
    }
    return at
  })
  return { unique, indexOf }
}

/** Results of the unique instances, fanned back out to every input position. */
export const fanOut = <R>(results: readonly R[], indexOf: readonly number[]): R[] => indexOf.map((i) => results[i])
