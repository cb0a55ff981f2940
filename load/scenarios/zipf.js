import { createPayloads } from './payloads.js'
import { createRandom } from './random.js'

/**
 * Repeat traffic: callers re-scoring the same entities with the same features, the most popular
 * far more often than the rest (Zipf). `distinct` valid single-row requests are generated once
 * from the catalog; each draw picks one by Zipf rank, so a prediction cache sees the repeats a
 * real population makes. Plain ESM without Node APIs, like the other scenarios.
 */

/**
 * A sampler of ranks 0..n-1 with P(k) ∝ 1 / (k + 1)^exponent (inverse CDF, binary search).
 * @param {number} n
 * @param {number} exponent
 * @param {import('./random.js').Random} random
 * @returns {() => number}
 */
export const zipfSampler = (n, exponent, random) => {
  const cumulative = new Float64Array(n)
  let total = 0
  for (let k = 0; k < n; k++) cumulative[k] = total += 1 / Math.pow(k + 1, exponent)
  return () => {
    const u = random.next() * total
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cumulative[mid] < u) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/**
 * @typedef {object} ZipfOptions
 * @property {import('./payloads.js').Catalog} catalog
 * @property {number} distinct how many different requests there are
 * @property {number} exponent Zipf's s (1 ≈ word frequencies; larger, more skewed)
 * @property {number} [seed]
 */

/**
 * A deterministic stream of valid one-row predict requests drawn from `distinct` by Zipf rank.
 * @param {ZipfOptions} options
 * @returns {{ path: string, next: () => import('./payloads.js').Payload }}
 */
export const createZipfPayloads = ({ catalog, distinct, exponent, seed = 1 }) => {
  const made = createPayloads({ catalog, seed, mix: { refuseShare: 0, fixShare: 0, pinnedShare: 0, instances: 1 } })
  const pool = Array.from({ length: distinct }, () => made.next())
  const rank = zipfSampler(distinct, exponent, createRandom(seed + 1))
  return { path: made.path, next: () => pool[rank()] }
}
