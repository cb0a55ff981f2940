/**
 * Sticky assignment: the bucket (0..9999) a key falls into for an experiment salt. Both tiers
 * and offline analysis must agree on it, so it is a fixed, dependency-free hash (32-bit FNV-1a
 * over UTF-8, then a murmur3 finalizer so nearby keys spread evenly).
 */
export const BUCKETS = 10_000

const encoder = new TextEncoder()

export const stickyBucket = (salt: string, key: string): number => {
  let h = 0x811c9dc5
  for (const byte of encoder.encode(`${salt}\u0000${key}`)) {
    h ^= byte
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return (h >>> 0) % BUCKETS
}
