import { expect } from 'vitest'
import { DURATION_METRIC, REQUESTS_METRIC } from '../../../../edge/exposition/requests.ts'
import { type Sample, matching, total } from './samples.ts'

const SERIES_LABELS = ['model', 'version', 'variant'] as const

/**
 * Every duration series: buckets cumulative in `le`, `+Inf` equal to `_count`, `_count` equal to
 * the requests counted with the same model, version and variant, and a sum no larger than
 * `_count` times the largest finite bound it could hold.
 */
export const expectConsistentHistograms = (samples: readonly Sample[]): void => {
  const counts = matching(samples, `${DURATION_METRIC}_count`)
  expect(counts.length).toBeGreaterThan(0)
  for (const count of counts) {
    const series = Object.fromEntries(SERIES_LABELS.map((l) => [l, count.labels[l]]))
    const buckets = matching(samples, `${DURATION_METRIC}_bucket`, series)
      .map((b) => ({ le: b.labels.le === '+Inf' ? Infinity : Number(b.labels.le), value: b.value }))
      .sort((a, b) => a.le - b.le)
    expect(buckets.length, JSON.stringify(series)).toBe(14)
    for (let i = 1; i < buckets.length; i++) expect(buckets[i].value, JSON.stringify(series)).toBeGreaterThanOrEqual(buckets[i - 1].value)
    expect(buckets.at(-1)).toEqual({ le: Infinity, value: count.value })
    expect(count.value, JSON.stringify(series)).toBe(total(samples, REQUESTS_METRIC, series))
    expect(total(samples, `${DURATION_METRIC}_sum`, series)).toBeGreaterThanOrEqual(0)
  }
}
