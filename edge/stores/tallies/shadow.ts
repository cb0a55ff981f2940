import * as z from 'zod'
import { REQUESTS, SHADOW_AGREEING, SHADOW_DIFF_BUCKET, SHADOW_DIFF_BUCKETS, SHADOW_DIFF_SUM, SHADOW_ROWS, type Tally, field, fieldParts } from './tally.ts'

/** A shadow version's comparison with one served version, summed over every isolate's counts. */
export const shadowPairSchema = z.object({
  model: z.string(),
  version: z.number().int().describe('the version the client was served'),
  shadow_version: z.number().int(),
  rows: z.number().int().nonnegative().describe('rows the shadow answered and the edge compared'),
  agreeing: z.number().int().nonnegative().describe('compared rows whose label agrees with the served one'),
  agreement: z.number().nullable().describe('agreeing / rows; null before any row was compared'),
  abs_diff_sum: z.number().nonnegative().describe('Σ|Δp| over the rows compared'),
  mean_abs_diff: z.number().nullable().describe('mean |Δp|; null before any row was compared'),
  p99_abs_diff: z.number().nullable().describe('p99 |Δp| from the fixed buckets, interpolated within its bucket as PromQL\'s histogram_quantile does'),
  buckets: z.array(z.object({ le: z.union([z.number(), z.literal('+Inf')]), rows: z.number().int().nonnegative() })).describe('rows per |Δp| bucket, not cumulative: `le` its upper bound'),
})

export type ShadowPair = z.infer<typeof shadowPairSchema>

/** The q-quantile of per-bucket counts, linearly within the bucket it falls in (the +Inf bucket answers its lower bound). */
export const bucketQuantile = (q: number, bounds: readonly number[], counts: readonly number[]): number | null => {
  const total = counts.reduce((n, c) => n + c, 0)
  if (total === 0) return null
  const rank = q * total
  let below = 0
  for (let i = 0; i < counts.length; i++) {
    if (below + counts[i] >= rank && counts[i] > 0) {
      if (i >= bounds.length) return bounds[bounds.length - 1]
      const lower = i === 0 ? 0 : bounds[i - 1]
      return lower + (bounds[i] - lower) * ((rank - below) / counts[i])
    }
    below += counts[i]
  }
  return bounds[bounds.length - 1]
}

/** Every (model, served version, shadow version) the counts hold, sorted. */
export const shadowPairs = (tally: Tally): ShadowPair[] => {
  const pairs: ShadowPair[] = []
  for (const [name, rows] of tally) {
    const parts = fieldParts(name)
    if (parts[0] !== SHADOW_ROWS || parts.length !== 4) continue
    const [, model, version, shadow] = parts
    const key = field(model, version, shadow)
    const counts = Array.from({ length: SHADOW_DIFF_BUCKETS.length + 1 }, (_, i) => tally.get(field(SHADOW_DIFF_BUCKET, key, i)) ?? 0)
    const agreeing = tally.get(field(SHADOW_AGREEING, key)) ?? 0
    const sum = (tally.get(field(SHADOW_DIFF_SUM, key)) ?? 0) / 1e6
    pairs.push({
      model,
      version: Number(version),
      shadow_version: Number(shadow),
      rows,
      agreeing,
      agreement: rows > 0 ? agreeing / rows : null,
      abs_diff_sum: sum,
      mean_abs_diff: rows > 0 ? sum / rows : null,
      p99_abs_diff: bucketQuantile(0.99, SHADOW_DIFF_BUCKETS, counts),
      buckets: counts.map((n, i) => ({ le: SHADOW_DIFF_BUCKETS[i] ?? '+Inf', rows: n })),
    })
  }
  return pairs.sort((a, b) => a.model.localeCompare(b.model) || a.shadow_version - b.shadow_version || a.version - b.version)
}

/** Shadow calls to `shadowVersion` of `model` and how many failed (any answer but 200), as the request counts hold them. */
export const shadowCalls = (tally: Tally, model: string, shadowVersion: number): { calls: number; errors: number } => {
  let calls = 0
  let errors = 0
  for (const [name, count] of tally) {
    const parts = fieldParts(name)
    if (parts[0] !== REQUESTS || parts.length !== 6 || parts[1] !== model || parts[2] !== String(shadowVersion) || parts[3] !== 'shadow') continue
    calls += count
    if (parts[4] !== '200') errors += count
  }
  return { calls, errors }
}
