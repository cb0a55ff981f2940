/**
 * Sticky assignment: the bucket (0..9999) a key falls into for an experiment. Both tiers and
 * offline analysis must agree on it, so it is a fixed, dependency-free hash (32-bit FNV-1a over
 * the UTF-8 of the parts joined by NUL, then a murmur3 finalizer so nearby keys spread evenly).
 */
export const BUCKETS = 10_000

const encoder = new TextEncoder()

/** The 32-bit hash of the parts, e.g. `stickyHash(salt, key)`. */
export const stickyHash = (...parts: string[]): number => {
  let h = 0x811c9dc5
  for (const byte of encoder.encode(parts.join('\u0000'))) {
    h ^= byte
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** The bucket of the parts, the key last: `stickyBucket(salt, key)`. */
export const stickyBucket = (...parts: string[]): number => stickyHash(...parts) % BUCKETS
