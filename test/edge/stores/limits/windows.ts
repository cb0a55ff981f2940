/** A seeded generator, so every run draws the same sequences. */
export const seeded = (seed: number) => {
  let state = seed
  return () => (state = (state * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31
}

/** The most admissions any rolling window (t − windowMs, t] holds; `admitted` ascending. */
export const busiestWindow = (admitted: readonly number[], windowMs: number): number => {
  let busiest = 0
  for (let last = 0, first = 0; last < admitted.length; last++) {
    while (admitted[first] <= admitted[last] - windowMs) first++
    busiest = Math.max(busiest, last - first + 1)
  }
  return busiest
}
