/**
 * Seeded randomness for the model builders. Everything a build draws comes from one of these
 * streams, which is what makes two builds byte-identical.
 */
export interface Random {
  /** Uniform in [0, 1). */
  next(): number
  normal(mean?: number, sd?: number): number
  /** Uniform integer in [min, max]. */
  int(min: number, max: number): number
  bernoulli(p: number): boolean
  poisson(lambda: number): number
  /** One of `items`, drawn with the given relative weights. */
  choice<T>(items: readonly T[], weights: readonly number[]): T
  /** Fisher-Yates, in place. */
  shuffle<T extends { [i: number]: unknown; length: number }>(items: T): T
}

/** mulberry32: 32 bits of state is plenty for a few million draws and trivially portable. */
const mulberry32 = (seed: number): (() => number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

export const createRandom = (seed: number): Random => {
  const next = mulberry32(seed)
  return {
    next,
    normal(mean = 0, sd = 1) {
      // Box-Muller, spare discarded: keeping it would make draws depend on call parity.
      const u = 1 - next()
      const v = next()
      return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
    },
    int(min, max) {
      return min + Math.floor(next() * (max - min + 1))
    },
    bernoulli(p) {
      return next() < p
    },
    poisson(lambda) {
      // Knuth's product method; the builders only ask for small means.
      const limit = Math.exp(-lambda)
      let k = 0
      let product = next()
      while (product > limit) {
        k++
        product *= next()
      }
      return k
    },
    choice(items, weights) {
      const total = weights.reduce((sum, w) => sum + w, 0)
      let r = next() * total
      for (let i = 0; i < items.length - 1; i++) {
        r -= weights[i]
        if (r < 0) return items[i]
      }
      return items[items.length - 1]
    },
    shuffle(items) {
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1))
        const t = items[i]
        items[i] = items[j]
        items[j] = t
      }
      return items
    },
  }
}
