/**
 * A seeded pseudo-random source (mulberry32): the same seed gives the same payloads on every
 * runner — k6 VUs, autocannon, the capacity search — so a run can be repeated and compared.
 * Plain ESM without Node APIs: k6 imports it by relative path.
 */

/**
 * @typedef {object} Random
 * @property {() => number} next uniform in [0, 1)
 * @property {(p: number) => boolean} chance true with probability p
 * @property {(min: number, max: number) => number} int uniform integer in [min, max]
 * @property {<T>(items: readonly T[]) => T} pick one element, uniformly
 * @property {() => number} normal standard normal (Box–Muller)
 */

/**
 * @param {number} seed any integer
 * @returns {Random}
 */
export const createRandom = (seed) => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    chance: (p) => next() < p,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)],
    normal: () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()),
  }
}
